/**
 * How the rollout controller's copies and removals leave it: one message
 * to one cluster's agent, and what became of it. The tunnels implement it
 * in the hub (rollout-tunnel.ts, peer-rollouts.ts), fakes in tests.
 */
import type { CopyMessage, RemoveMessage } from '../../rollout/wire.js';

/** What happened to one message sent to an agent. */
export type DeliveryOutcome =
  { status: 'delivered' } | { status: 'disconnected' } | { status: 'failed'; message: string };

/** Where copies and removals go: the clusters' tunnels in the hub, a fake in tests. */
export interface RolloutDelivery {
  sendCopy(cluster: string, message: CopyMessage): Promise<DeliveryOutcome>;
  sendRemove(cluster: string, message: RemoveMessage): Promise<DeliveryOutcome>;
}
