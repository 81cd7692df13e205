/**
 * The hub's state, behind one interface: registered clusters, hub tokens,
 * users and revoked certificates. The default implementation is
 * node:sqlite under the data directory (sqlite-store.ts); an etcd store for
 * several hub replicas can implement the same interface later. Methods are
 * asynchronous for that reason, even though SQLite answers at once.
 */

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

/** The hub's persistent state. */
export interface HubStore {
  /** Adds a cluster; false when the name is taken. */
  addCluster(cluster: ClusterRecord): Promise<boolean>;
  getCluster(name: string): Promise<ClusterRecord | undefined>;
  listClusters(): Promise<ClusterRecord[]>;
  /** Removes a cluster; returns what was removed. */
  deleteCluster(name: string): Promise<ClusterRecord | undefined>;
  updateClusterStatus(name: string, status: ClusterStatusUpdate): Promise<void>;
  /** Records a renewed certificate for a cluster. */
  updateClusterCertificate(name: string, certSerial: string, certNotAfter: string): Promise<void>;

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

  /** Adds or replaces a user. */
  putUser(user: UserRecord): Promise<void>;
  findUserByTokenHash(tokenHash: string): Promise<UserRecord | undefined>;
  listUsers(): Promise<UserRecord[]>;

  /** Marks a certificate serial as revoked. */
  revokeCertificate(serial: string, reason: string): Promise<void>;
  isCertificateRevoked(serial: string): Promise<boolean>;

  close(): Promise<void>;
}
