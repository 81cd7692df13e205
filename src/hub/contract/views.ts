/**
 * What the hub's operator API answers with, as its clients read it: the
 * hub client, the CLI's tables and the package's typed API import these,
 * never the server's rooms. A contract, as rollout/api.ts is: change it only
 * with both sides.
 */
import type { ClusterHold } from '../../rollout/api.js';

/** A cluster as the operator API shows it. */
export interface ClusterView {
  name: string;
  labels: Record<string, string>;
  state: 'Connected' | 'Disconnected';
  lastSeen?: string | undefined;
  kubernetesVersion?: string | undefined;
  nodeCount?: number | undefined;
  registeredAt: string;
  certNotAfter: string;
  /** An operator's hold: no rollout changes the cluster until it is released. */
  hold?: ClusterHold;
  /** Values rollouts' customization reads (`${property:KEY}`). */
  properties?: Record<string, string>;
}

/** A replica as `hub replicas list` shows it. */
export interface ReplicaView {
  id: string;
  advertiseUrl: string;
  peerUrl: string;
  startedAt: string;
  /** Tunnels the replica holds. */
  tunnels: number;
  /** Whether it runs the controllers; absent when it could not be asked. */
  isLeader?: boolean;
  /** Whether this replica answered the request. */
  isSelf: boolean;
}
