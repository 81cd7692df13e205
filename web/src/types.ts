/** The shapes the view's API answers with (src/hub/web/ on the hub). */

export type ClusterState = 'Connected' | 'Disconnected';

export interface ClusterView {
  name: string;
  labels: Record<string, string>;
  state: ClusterState;
  lastSeen?: string;
  kubernetesVersion?: string;
  nodeCount?: number;
  registeredAt: string;
  certNotAfter: string;
  hold?: { reason: string; since: string; by: string };
  /** What its agent last reported of its health; absent until a report arrives. */
  health?: ClusterHealth;
}

export interface CertificateExpiry {
  kind: 'cluster-ca' | 'apiserver-serving' | 'hub-client';
  subject: string;
  notAfter: string;
}

export interface ClusterHealth {
  reportedAt: string;
  nodes?: { total: number; ready: number; notReady: string[] };
  certificates: CertificateExpiry[];
  package?: {
    name: string;
    version: string;
    distribution: string;
    manifestSha256: string;
    signer?: string;
    action: 'init' | 'upgrade';
    at: string;
  };
}

export type AttentionReasonKind = 'offline' | 'rollout-halted' | 'nodes-not-ready' | 'certificate-expiring' | 'held';

export type AttentionReason =
  | { kind: 'offline'; since: string; isNeverConnected: boolean }
  | { kind: 'rollout-halted'; since: string; rollouts: { rollout: string; phase: Phase }[] }
  | { kind: 'nodes-not-ready'; ready: number; total: number; notReady: string[]; reportedAt: string }
  | { kind: 'certificate-expiring'; certificates: CertificateExpiry[] }
  | { kind: 'held'; since: string; by: string; reason: string };

export interface AttentionPage {
  total: number;
  offset: number;
  limit: number;
  rows: { cluster: ClusterView; reasons: AttentionReason[]; since?: string }[];
  counts: Record<AttentionReasonKind, number>;
  haltedRollouts: { name: string; haltReason?: string; since: string; clusters: number }[];
  isRolloutStateKnown: boolean;
  offlineForSeconds: number;
  certsWithinDays: number;
  now: string;
}

export interface ClusterPage {
  total: number;
  offset: number;
  limit: number;
  clusters: ClusterView[];
}

export interface CountOf {
  value: string;
  count: number;
}

export type OfflineBucket = 'lt5m' | 'lt1h' | 'lt1d' | 'gte1d' | 'never';

export interface FleetSummary {
  total: number;
  connected: number;
  disconnected: number;
  offline: Record<OfflineBucket, number>;
  held: number;
  versions: CountOf[];
  otherVersions: number;
  labels: { key: string; values: CountOf[]; otherValues: number }[];
  otherLabelKeys: number;
}

export type Phase = 'waiting' | 'held' | 'offline-pending' | 'applying' | 'progressing' | 'ready' | 'failed';
export type PhaseCounts = Record<Phase, number>;

export interface RolloutListItem {
  name: string;
  revision: number;
  state: string;
  owner: string;
  clusters: number;
  counts: PhaseCounts;
  updatedAt: string;
}

export interface RolloutView {
  name: string;
  revision: number;
  state: string;
  haltReason?: string;
  rollbackOf?: { revision: number; reason: string };
  owner: string;
  currentWave: number;
  waves: { index: number; clusters: number; counts: PhaseCounts; state: string }[];
  counts: PhaseCounts;
  summaries: { name: string; value?: number; reporting: number }[];
  clusters: {
    cluster: string;
    wave: number;
    phase: Phase;
    targetRevision?: string;
    message?: string;
    hold?: { reason: string; since: string; by: string };
    lastSeen?: string;
  }[];
  updatedAt: string;
  canChange: boolean;
}

export interface NodeView {
  name: string;
  ready: string;
  roles: string[];
  kubeletVersion?: string;
  isUnschedulable: boolean;
}

export interface ClusterDetail {
  cluster: ClusterView;
  rollouts: { name: string; state: string; revision: number; wave: number; phase: Phase; message?: string }[];
  /** Whether the signed-in user may hold and release it (a hub admin). */
  mayHold: boolean;
}
