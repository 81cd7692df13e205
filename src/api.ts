/**
 * edgeadm as a library: `import { connectHub } from 'edgeadm'` (the
 * package's main entry). It gives scripts the same operations as the
 * `edgeadm hub rollout …` and `hub clusters …` commands, typed, without the
 * CLI: no oclif, no process exits, errors thrown as {@link EdgeadmError}
 * with a stable `code`. The CLI's command map is src/index.ts, a different
 * entry.
 *
 * ```ts
 * const hub = connectHub();                       // $EDGEADM_HUB_CONFIG, then ~/.edgeadm/hub.yaml
 * const { revision } = await hub.rollouts.applyFile('web-rollout.yaml');
 * for await (const status of hub.rollouts.watch('web')) console.log(status.state, status.counts.ready);
 * ```
 */
import { resolve } from 'node:path';
import {
  HubClient,
  type AttentionList,
  type AttentionRequest,
  type HeldClusterView,
  type WatchRolloutOptions,
} from './hub-client/hub-client.js';
import { loadHubConfig, type HubConfig } from './hub/contract/hub-config.js';
import type { ClusterView } from './hub/contract/views.js';
import type { ApplyResult, DeleteResult, RolloutListItem, RolloutStatusView } from './rollout/api.js';
import { readRolloutFile, resolveRolloutDocument, type RolloutDocument } from './rollout/rollout-file.js';

export { EdgeadmError, ValidationError, isEdgeadmError, ExitCode } from './errors.js';
export {
  FINAL_ROLLOUT_STATES,
  HubClient,
  type AttentionList,
  type AttentionRequest,
  type HeldClusterView,
  type WatchRolloutOptions,
} from './hub-client/hub-client.js';
export type { HubConfig } from './hub/contract/hub-config.js';
export type {
  CertificateExpiryView,
  ClusterHealthView,
  ClusterView,
  InstalledPackageView,
} from './hub/contract/views.js';
export type {
  AttentionReason,
  AttentionReasonKind,
  AttentionRow,
  AttentionSortKey,
  HaltedRolloutTarget,
  HaltedRolloutView,
} from './hub/contract/attention.js';
export {
  STATUS_LONG_POLL_MS,
  type ApplyResult,
  type ClusterHold,
  type ClusterRowView,
  type DeleteResult,
  type DryRunPlan,
  type PhaseCounts,
  type RolloutListItem,
  type RolloutStatusView,
  type WaveView,
} from './rollout/api.js';
export type { ClusterPhase, RolloutState } from './rollout/progress.js';
export type { SummaryValue } from './rollout/readiness.js';
export { parseRollout, ROLLOUT_API_VERSION, type RolloutSpec } from './rollout/spec.js';
export {
  readRolloutFile,
  resolveRolloutDocument,
  type LoadedRollout,
  type RolloutDocument,
} from './rollout/rollout-file.js';

/** Options of {@link RolloutOperations.apply}. */
export interface ApplyOptions {
  /** Ask the hub what it would do (waves, rendered copies); nothing is stored. */
  dryRun?: boolean;
  /** Where `spec.resourcesFrom` paths start, and what they may not leave; the current directory by default. */
  baseDir?: string;
}

/** Rollouts on one hub. */
export interface RolloutOperations {
  /**
   * Creates or updates a rollout from a document: its `spec.resourcesFrom`
   * is read first and the whole is checked locally, so a bad document
   * throws a `ValidationError` naming the field before any request.
   */
  apply(document: RolloutDocument | Record<string, unknown>, options?: ApplyOptions): Promise<ApplyResult>;
  /** Like `edgeadm hub rollout apply -f FILE`. */
  applyFile(path: string, options?: Omit<ApplyOptions, 'baseDir'>): Promise<ApplyResult>;
  list(): Promise<RolloutListItem[]>;
  status(name: string, options?: { clusters?: boolean }): Promise<RolloutStatusView>;
  /** Each change of the status, first the current one; ends after complete, halted or aborted. */
  watch(name: string, options?: Pick<WatchRolloutOptions, 'clusters' | 'signal'>): AsyncGenerator<RolloutStatusView>;
  pause(name: string): Promise<RolloutStatusView>;
  resume(name: string): Promise<RolloutStatusView>;
  abort(name: string): Promise<RolloutStatusView>;
  /** Back to the previous revision's document, as a new revision. */
  undo(name: string): Promise<RolloutStatusView>;
  /** Removes the rollout and its objects from every cluster it reached. */
  delete(name: string): Promise<DeleteResult>;
  /** The stored document of the current revision. */
  document(name: string): Promise<{ revision: number; document: RolloutDocument }>;
}

/** Clusters registered with one hub. */
export interface ClusterOperations {
  list(selector?: string): Promise<ClusterView[]>;
  /** Those that need someone now, and why, like `edgeadm hub clusters list --attention`. */
  attention(request?: AttentionRequest): Promise<AttentionList>;
  get(name: string): Promise<ClusterView>;
  /** No rollout changes the cluster until it is released. */
  hold(name: string, reason: string): Promise<HeldClusterView>;
  release(name: string): Promise<HeldClusterView>;
  /** The values a Rollout reads as `${property:KEY}`. */
  setProperties(name: string, properties: Record<string, string>): Promise<HeldClusterView>;
}

/** A hub, as a script sees it. */
export interface Hub {
  rollouts: RolloutOperations;
  clusters: ClusterOperations;
  /** The underlying client, for the calls not wrapped here. */
  client: HubClient;
}

/**
 * Connects to a hub: from a hub config file (what `hub serve` writes as
 * admin.yaml, or `hub user create --output`), from a config object, or,
 * with no argument, as the CLI does: `$EDGEADM_HUB_CONFIG`, then
 * `~/.edgeadm/hub.yaml`. Nothing goes over the network until a call.
 *
 * @throws {EdgeadmError} `E_HUB_CONFIG_MISSING` or `E_HUB_CONFIG_INVALID` for a bad file.
 */
export function connectHub(config?: string | HubConfig): Hub {
  const client = new HubClient(typeof config === 'object' ? config : loadHubConfig(config));
  const rollouts: RolloutOperations = {
    apply: async (document, options = {}) => {
      const loaded = await resolveRolloutDocument(document, resolve(options.baseDir ?? '.'));
      return client.applyRollout(loaded.document, { dryRun: options.dryRun === true });
    },
    applyFile: async (path, options = {}) => {
      const loaded = await readRolloutFile({ path });
      return client.applyRollout(loaded.document, { dryRun: options.dryRun === true });
    },
    list: () => client.listRollouts(),
    status: (name, options) => client.rolloutStatus(name, options),
    watch: (name, options) => client.watchRollout(name, options),
    pause: (name) => client.pauseRollout(name),
    resume: (name) => client.resumeRollout(name),
    abort: (name) => client.abortRollout(name),
    undo: (name) => client.undoRollout(name),
    delete: (name) => client.deleteRollout(name),
    document: (name) => client.getRolloutDocument(name),
  };
  const clusters: ClusterOperations = {
    list: (selector) => client.listClusters(selector),
    attention: (request) => client.listAttention(request),
    get: (name) => client.getCluster(name),
    hold: (name, reason) => client.holdCluster(name, reason),
    release: (name) => client.releaseCluster(name),
    setProperties: (name, properties) => client.setClusterProperties(name, properties),
  };
  return { rollouts, clusters, client };
}
