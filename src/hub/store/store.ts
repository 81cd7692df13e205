/**
 * The hub's state, behind one interface: registered clusters (with their
 * holds and properties), hub tokens, users, revoked certificates, and
 * rollouts (their documents per revision, their progress, the status each
 * cluster last reported, and the removals owed to clusters that were
 * offline). The default implementation is
 * node:sqlite under the data directory (sqlite-store.ts); an etcd store for
 * several hub replicas can implement the same interface later. Methods are
 * asynchronous for that reason, even though SQLite answers at once, and
 * every record is read and written whole (no partial updates a key-value
 * store could not do in one put), except a rollout's progress: each
 * cluster's progress is its own record (rollout-progress-rows.ts), so that
 * a controller pass writes only the clusters it changed.
 */
import type { ClusterHealthView } from '../../health/wire.js';
import type { ClusterHold } from '../../rollout/api.js';
import type { RolloutProgress } from '../../rollout/progress.js';
import type { ReportedObject, RolloutOwner } from '../../rollout/wire.js';

/** A registered edge cluster. */
export interface ClusterRecord {
  name: string;
  labels: Record<string, string>;
  /** Serial number (hex) of the client certificate the hub issued to the cluster's agent. */
  certSerial: string;
  /** When that certificate expires (ISO 8601). */
  certNotAfter: string;
  registeredAt: string;
  /** Last time the agent was connected (ISO 8601), set while connected and at disconnect. */
  lastSeen?: string;
  /** As the agent reported it from its API server. */
  kubernetesVersion?: string;
  nodeCount?: number;
  /** The last health report of the cluster's agent that said something new (health/wire.ts). */
  health?: ClusterHealthView;
  /** An operator's hold: no rollout changes the cluster until it is released. */
  hold?: ClusterHold;
  /** Values the operator set for rollouts' customization (`${property:KEY}`). */
  properties?: Record<string, string>;
}

/** A hub token: lets `register-cloud` discover the hub and register one or more clusters. */
export interface HubTokenRecord {
  id: string;
  /** The token secret: it signs the discovery document. A credential. */
  secret: string;
  createdAt: string;
  /** Absent: never expires. */
  expiresAt?: string;
  /** Registrations left; absent: unlimited within the TTL. */
  usagesLeft?: number;
  /**
   * The labels a cluster registered with this token must have: exactly these
   * keys, each with this value or any value for `*` (token-labels.ts).
   * Absent: any labels.
   */
  labels?: Record<string, string>;
}

/** A person (or the hub admin) allowed to use the hub. */
export interface UserRecord {
  name: string;
  /** SHA-256 (hex) of the user's bearer token; the token itself is never stored. */
  tokenHash: string;
  /** Which clusters the user may reach, as a label selector (empty: all). */
  clustersSelector: string;
  /** Groups impersonated downstream. */
  groups: string[];
  /** Whether the user may use the operator API (tokens, clusters, users). */
  isAdmin: boolean;
  createdAt: string;
  /** Absent: never expires. */
  expiresAt?: string;
}

/** What a token use attempt found. */
export type TokenUse = 'used' | 'unknown' | 'expired' | 'spent';

/** Status fields the hub updates while an agent is connected. */
export interface ClusterStatusUpdate {
  lastSeen: string;
  kubernetesVersion?: string;
  nodeCount?: number;
}

/** What {@link HubStore.useTokenToAddCluster} did: `'added'`, or why it did nothing. */
export type TokenRegistration = 'added' | 'exists' | Exclude<TokenUse, 'used'>;

/** Who a rollout acts as, and whose clusters it may reach: the user who last applied (or undid) it. */
export interface RolloutOwnerRecord extends RolloutOwner {
  /** The owner's clusters selector when they applied it (empty: all clusters). */
  clustersSelector: string;
}

/** A rollout: its current revision and the controller's progress on it. */
export interface RolloutRecord {
  name: string;
  owner: RolloutOwnerRecord;
  /** The current revision (its document is stored under this number). */
  revision: number;
  progress: RolloutProgress;
  /** Increases at every change of what the rollout's status view shows. */
  statusVersion: number;
  createdAt: string;
  updatedAt: string;
}

/** One rollout of a controller pass's write (putRollouts). */
export interface RolloutWrite {
  record: RolloutRecord;
  /** The clusters whose progress changed since the record was last written; all of them when absent. */
  changedClusters?: readonly string[];
}

/** One stored revision of a rollout's document. */
export interface RolloutRevisionRecord {
  name: string;
  revision: number;
  /** The Rollout document as applied (JSON), file references already read. */
  document: unknown;
  appliedBy: string;
  appliedAt: string;
}

/** What a cluster last reported of a rollout's copy: kept so that a restarted hub still has its summaries. */
export interface ReportedCopyRecord {
  rollout: string;
  cluster: string;
  revision: string;
  objects: ReportedObject[];
}

/** A removal owed to a cluster: the rollout was deleted (or left it) while the cluster was offline. */
export interface PendingRemovalRecord {
  rollout: string;
  cluster: string;
  owner: RolloutOwner;
}

/** The hub's persistent state. */
export interface HubStore {
  /** Adds a cluster; false when the name is taken. */
  addCluster(cluster: ClusterRecord): Promise<boolean>;
  getCluster(name: string): Promise<ClusterRecord | undefined>;
  listClusters(): Promise<ClusterRecord[]>;
  /** Removes a cluster; returns what was removed. */
  deleteCluster(name: string): Promise<ClusterRecord | undefined>;
  updateClusterStatus(name: string, status: ClusterStatusUpdate): Promise<void>;
  /** Keeps a cluster's health report (the hub writes one only when it says something new). */
  updateClusterHealth(name: string, health: ClusterHealthView): Promise<void>;
  /** Records a renewed certificate for a cluster. */
  updateClusterCertificate(name: string, certSerial: string, certNotAfter: string): Promise<void>;
  /** Sets (or, with undefined, releases) a cluster's hold; false when there is no such cluster. */
  setClusterHold(name: string, hold: ClusterHold | undefined): Promise<boolean>;
  /** Replaces a cluster's properties; false when there is no such cluster. */
  setClusterProperties(name: string, properties: Record<string, string>): Promise<boolean>;

  addToken(token: HubTokenRecord): Promise<void>;
  getToken(id: string): Promise<HubTokenRecord | undefined>;
  listTokens(): Promise<HubTokenRecord[]>;
  /**
   * Uses a token once, atomically: checks it exists, is not expired at
   * `now` and has usages left, and takes one usage.
   */
  useToken(id: string, now: Date): Promise<TokenUse>;
  /**
   * Registers a cluster with a token, in one transaction: takes one use of
   * the token (as {@link HubStore.useToken}) and adds the cluster, or does
   * neither. `'exists'` when the name is taken (the use is not taken).
   */
  useTokenToAddCluster(id: string, now: Date, cluster: ClusterRecord): Promise<TokenRegistration>;
  /** Removes a token (revoked: it registers no more clusters); false when there is no such token. */
  deleteToken(id: string): Promise<boolean>;

  /** Adds or replaces a user. */
  putUser(user: UserRecord): Promise<void>;
  findUserByTokenHash(tokenHash: string): Promise<UserRecord | undefined>;
  listUsers(): Promise<UserRecord[]>;
  /** Removes a user (their token stops working); false when there is no such user. */
  deleteUser(name: string): Promise<boolean>;

  /** Marks a certificate serial as revoked. */
  revokeCertificate(serial: string, reason: string): Promise<void>;
  isCertificateRevoked(serial: string): Promise<boolean>;

  /**
   * Writes a rollout record, and with `revision` also stores that revision's
   * document, in one transaction. Only the newest `keepRevisions` documents
   * of the rollout are kept.
   */
  putRollout(record: RolloutRecord, revision?: RolloutRevisionRecord, keepRevisions?: number): Promise<void>;
  /**
   * Writes several rollouts at once (the controller's pass): each record's
   * head, and of its progress only the clusters `changedClusters` names
   * (written, or removed when the record no longer has them); without
   * `changedClusters`, every cluster's (the progress replaced whole).
   */
  putRollouts(writes: readonly RolloutWrite[]): Promise<void>;
  getRollout(name: string): Promise<RolloutRecord | undefined>;
  listRollouts(): Promise<RolloutRecord[]>;
  /** A stored revision's document. */
  getRolloutRevision(name: string, revision: number): Promise<RolloutRevisionRecord | undefined>;
  /** The revision numbers stored for a rollout, oldest first. */
  listRolloutRevisions(name: string): Promise<number[]>;
  /**
   * Removes a rollout (record, documents, reported copies) and records the
   * removals owed to offline clusters, in one transaction.
   */
  deleteRollout(name: string, pendingRemovals: readonly PendingRemovalRecord[]): Promise<boolean>;

  /** Records what clusters last reported (one row per rollout and cluster, replaced), in one transaction. */
  putReportedCopies(reports: readonly ReportedCopyRecord[]): Promise<void>;
  listReportedCopies(rollout: string): Promise<ReportedCopyRecord[]>;
  /** Forgets what a cluster reported of a rollout (the rollout left it). */
  deleteReportedCopy(rollout: string, cluster: string): Promise<void>;

  /** Adds removals owed to clusters (replacing one for the same rollout and cluster). */
  addPendingRemovals(removals: readonly PendingRemovalRecord[]): Promise<void>;
  listPendingRemovals(): Promise<PendingRemovalRecord[]>;
  deletePendingRemoval(rollout: string, cluster: string): Promise<void>;

  close(): Promise<void>;
}
