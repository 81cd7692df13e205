/**
 * What the hub's operator API answers with, as its clients read it: the
 * hub client, the CLI's tables and the package's typed API import these,
 * never the server's rooms. A contract, as rollout/api.ts is: change it only
 * with both sides.
 */
import type { ClusterHold } from '../../rollout/api.js';
import type { ClusterHealthView } from '../../health/wire.js';

export type {
  CertificateExpiryView,
  CertificateKind,
  ClusterHealthView,
  InstalledPackageView,
  NodeHealthView,
} from '../../health/wire.js';

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
  /** What the cluster's agent last reported of its health (health/wire.ts); absent until a report arrives. */
  health?: ClusterHealthView;
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

/** A hub token as `hub token list` shows it: never its secret. */
export interface HubTokenView {
  id: string;
  createdAt: string;
  expiresAt?: string;
  /** Clusters it may still register; absent: any number within its lifetime. */
  usagesLeft?: number;
  /** The labels a cluster registered with it must have (`*`: any value), if limited. */
  labels?: Record<string, string>;
  /** usable, or why it registers no more clusters. */
  state: 'usable' | 'expired' | 'spent';
}

/** A hub user as `hub user list` shows them: never their token. */
export interface HubUserView {
  name: string;
  /** The clusters they reach (empty: every cluster, for an admin). */
  clustersSelector: string;
  groups: string[];
  isAdmin: boolean;
  createdAt: string;
  expiresAt?: string;
  state: 'active' | 'expired';
}
