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
  /** What the cluster's agent last reported of its health; absent until a report arrives. */
  health?: ClusterHealthView;
}

/** Which certificate an expiry is about. */
export type CertificateKind =
  /** The cluster's CA, as the agent's upstream trusts it. */
  | 'cluster-ca'
  /** The serving certificate the cluster's API server presents. */
  | 'apiserver-serving'
  /** The agent's own client certificate for the hub (the hub knows it: `certNotAfter`). */
  | 'hub-client';

/** A certificate's subject and expiry, as read where it is used. */
export interface CertificateExpiryView {
  kind: CertificateKind;
  subject: string;
  notAfter: string;
}

/** The install package a cluster was installed or last upgraded from, as `init` and `upgrade` record it in the cluster. */
export interface InstalledPackageView {
  name: string;
  version: string;
  distribution: string;
  /** SHA-256 (hex) of the package's manifest.json: every installed byte is listed there. */
  manifestSha256: string;
  /** The signing key's fingerprint (`sha256:` of its DER public key) when the package was verified against a pinned key. */
  signer?: string;
  /** The step that installed it. */
  action: 'init' | 'upgrade';
  at: string;
}

/**
 * What a cluster's agent last reported of its health, every heartbeat of
 * the health stream (src/tunnel/health.ts) and kept by the hub across
 * disconnects. Each part is best effort: absent when the agent could not
 * read it (for example no right to list nodes).
 */
export interface ClusterHealthView {
  /** When the agent made the report (ISO 8601, the hub's clock when it read it). */
  reportedAt: string;
  nodes?: {
    total: number;
    ready: number;
    /** The names of nodes not Ready, at most twenty. */
    notReady: string[];
  };
  certificates: CertificateExpiryView[];
  package?: InstalledPackageView;
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
