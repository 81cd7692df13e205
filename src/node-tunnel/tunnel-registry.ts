/**
 * The live tunnels, one per node: a newer tunnel of a node replaces the
 * older (drained), a closed one leaves, and one sweep closes tunnels that
 * sent nothing (not even the agent's pings) for the silence limit.
 */
import type { ClientHttp2Stream } from 'node:http2';
import type { Logger } from '../log/run-log.js';
import type { HubTunnel } from '../tunnel/hub-tunnel.js';
import { SILENCE_SWEEP_INTERVAL_MS, TUNNEL_PROBE_TIMEOUT_MS, TUNNEL_QUIET_MS } from './limits.js';

/** What the registry says about one node's tunnel (for logs and metrics). */
export interface TunnelRecord {
  node: string;
  /** Epoch ms. */
  connectedAt: number;
  /** Epoch ms, to within the silence sweep. */
  lastHeardAt: number;
  streams: number;
}

/** The live tunnels by node name. */
export class TunnelRegistry {
  readonly #tunnels = new Map<
    string,
    { tunnel: HubTunnel; record: TunnelRecord; isDraining: boolean; isProbing: boolean }
  >();
  readonly #logger: Logger;
  #sweep: NodeJS.Timeout | undefined;

  constructor(options: { logger: Logger }) {
    this.#logger = options.logger;
  }

  /** Takes a tunnel accepted for `tunnel.cluster` (the node's name). */
  add(tunnel: HubTunnel): void {
    const node = tunnel.cluster;
    const previous = this.#tunnels.get(node);
    const entry = {
      tunnel,
      record: { node, connectedAt: Date.now(), lastHeardAt: Date.now(), streams: 0 },
      isDraining: false,
      isProbing: false,
    };
    this.#tunnels.set(node, entry);
    if (previous) void previous.tunnel.drain();
    // An agent that stops (GOAWAY) takes no new connection from then on (as the hub's, issue #30).
    void tunnel.draining.then(() => (entry.isDraining = true));
    this.#logger.info(`node ${node}: tunnel up${previous ? ' (replaces the previous one)' : ''}`);
    void tunnel.closed.then(() => {
      if (this.#tunnels.get(node) !== entry) return;
      this.#tunnels.delete(node);
      this.#logger.info(`node ${node}: tunnel closed`);
    });
  }

  /** Whether `node` has a tunnel that takes new streams. */
  has(node: string): boolean {
    const entry = this.#tunnels.get(node);
    return entry !== undefined && entry.tunnel.isOpen && !entry.isDraining;
  }

  /**
   * Whether `node`'s tunnel answers a PING now ({@link TUNNEL_PROBE_TIMEOUT_MS});
   * one that does not is closed, so the node is offline from then on.
   */
  async isAlive(node: string): Promise<boolean> {
    const entry = this.#tunnels.get(node);
    if (entry === undefined || !this.has(node)) return false;
    if (await entry.tunnel.ping(TUNNEL_PROBE_TIMEOUT_MS)) return true;
    this.#logger.warn(`node ${node}: its tunnel did not answer a ping; closing it`);
    entry.tunnel.destroy();
    return false;
  }

  /** Opens a CONNECT stream to `authority` through `node`'s tunnel; undefined without one. */
  open(node: string, authority: string): ClientHttp2Stream | undefined {
    const entry = this.#tunnels.get(node);
    if (entry === undefined || !this.has(node)) return undefined;
    entry.record.streams += 1;
    return entry.tunnel.request({ ':method': 'CONNECT', ':authority': authority });
  }

  /** One record per live tunnel. */
  records(): TunnelRecord[] {
    return [...this.#tunnels.values()].map((entry) => ({ ...entry.record, lastHeardAt: entry.tunnel.lastHeardAt }));
  }

  /**
   * Starts the sweep: a tunnel quiet for {@link TUNNEL_QUIET_MS} is pinged, and
   * closed when the ping goes unanswered ({@link TUNNEL_PROBE_TIMEOUT_MS}), so
   * a link cut without a word ends the node's open connections (the API
   * server's pooled kubelet connections among them) within seconds, not after
   * the agent's 30 s silence limit, which stays as the backstop.
   */
  start(): void {
    this.#sweep = setInterval(() => {
      const now = Date.now();
      for (const entry of this.#tunnels.values()) {
        const { tunnel } = entry;
        if (tunnel.isSilent(now)) {
          this.#logger.warn(`node ${tunnel.cluster}: tunnel silent too long; closing it`);
          tunnel.destroy();
        } else if (!entry.isProbing && now - tunnel.lastHeardAt >= TUNNEL_QUIET_MS) {
          entry.isProbing = true;
          void tunnel.ping(TUNNEL_PROBE_TIMEOUT_MS).then((isAnswered) => {
            entry.isProbing = false;
            if (isAnswered || !tunnel.isOpen) return;
            this.#logger.warn(`node ${tunnel.cluster}: its tunnel did not answer a ping; closing it`);
            tunnel.destroy();
          });
        }
      }
    }, SILENCE_SWEEP_INTERVAL_MS);
    this.#sweep.unref();
  }

  /** Stops the sweep and closes every tunnel. */
  close(): void {
    clearInterval(this.#sweep);
    for (const { tunnel } of this.#tunnels.values()) tunnel.destroy();
    this.#tunnels.clear();
  }
}
