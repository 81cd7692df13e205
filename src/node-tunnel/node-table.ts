/**
 * The Nodes the server routes by: listed from the API server every
 * {@link NODE_LIST_INTERVAL_MS}, and again (at most every
 * {@link NODE_LIST_MIN_AGE_MS}) when asked about a name or address it does
 * not know yet (a node that just joined).
 */
import type { KubeClient } from '../kube/client.js';
import type { Logger } from '../log/run-log.js';
import { NODE_LIST_INTERVAL_MS, NODE_LIST_MIN_AGE_MS } from './limits.js';
import { knownNodeOf, type KnownNode, type NodeObject } from './routing.js';

/** The Nodes as last listed. */
export class NodeTable {
  readonly #client: Pick<KubeClient, 'list'>;
  readonly #logger: Logger;
  #nodes: KnownNode[] = [];
  #listedAt = 0;
  #listing: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: { client: Pick<KubeClient, 'list'>; logger: Logger }) {
    this.#client = options.client;
    this.#logger = options.logger;
  }

  /** The Nodes as last listed. */
  get nodes(): readonly KnownNode[] {
    return this.#nodes;
  }

  /** Lists now (one list at a time); a failure keeps the last list and is logged. */
  refresh(): Promise<void> {
    this.#listing ??= this.#client
      .list('/api/v1/nodes')
      .then((items) => {
        this.#nodes = items
          .map((item) => knownNodeOf(item as NodeObject))
          .filter((node): node is KnownNode => node !== undefined);
        this.#listedAt = Date.now();
      })
      .catch((error: Error) => this.#logger.warn(`cannot list the Nodes: ${error.message}`))
      .finally(() => (this.#listing = undefined));
    return this.#listing;
  }

  /** Lists again unless the last list is younger than {@link NODE_LIST_MIN_AGE_MS}. */
  async refreshIfStale(): Promise<void> {
    if (Date.now() - this.#listedAt >= NODE_LIST_MIN_AGE_MS) await this.refresh();
  }

  /** Lists now and then every {@link NODE_LIST_INTERVAL_MS} until {@link stop}. */
  async start(): Promise<void> {
    await this.refresh();
    this.#timer = setInterval(() => void this.refresh(), NODE_LIST_INTERVAL_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
