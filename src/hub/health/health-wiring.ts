/**
 * Health on this replica: each tunnel it accepts has its health stream
 * followed into one book, which the cluster views read.
 */
import type { Logger } from '../../log/run-log.js';
import type { HubStore } from '../store/store.js';
import type { TunnelRegistry } from '../replicas/tunnel-registry.js';
import { ClusterHealthBook } from './health-book.js';
import { followHealth } from './health-stream.js';

/** Follows every tunnel's health stream into a new book, and returns it. */
export function wireHealth(
  context: { store: HubStore; logger: Logger; now: () => Date },
  tunnels: TunnelRegistry,
): ClusterHealthBook {
  const book = new ClusterHealthBook(context);
  tunnels.listen({
    opened: (tunnel) => {
      followHealth(tunnel, book, context.logger);
    },
    closed: (cluster) => book.forget(cluster),
  });
  return book;
}
