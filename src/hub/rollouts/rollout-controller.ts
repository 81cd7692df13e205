/**
 * The hub's rollout controller: it owns every rollout's live state (in
 * memory, written through to the store) and moves it with the pure core
 * (src/rollout/progress.ts) whenever something happens.
 *
 * - Events only mark: a report is recorded at once (one cluster's
 *   progress), a tunnel connecting or disconnecting, a hold, a registration
 *   or an operator's command marks rollouts; one pass then steps each
 *   marked rollout once, at most every {@link ROLLOUT_PASS_INTERVAL_MS}. A
 *   reconnect storm of 10,000 clusters is a few passes, not 10,000.
 * - A timer wakes the controller for the next soak end or delivery
 *   deadline; the clock and the timers are injected, so tests decide time.
 * - Copies go to a {@link RolloutDelivery} (the tunnels, in the hub), one
 *   at a time per cluster, and only if they are still the cluster's target
 *   when their turn comes. A copy for a disconnected cluster waits for its
 *   tunnel: on connect the cluster's current copy (re-rendered, never an
 *   older one) and every removal it is owed go out.
 * - Removals owed to a cluster (the rollout was deleted or left it) are
 *   stored before they are sent, and forgotten once the agent took them,
 *   so offline clusters get them when they return, across hub restarts.
 * - What each cluster last reported is kept (memory and store), so a
 *   restarted hub shows the same summaries.
 */
import type { HubStore, PendingRemovalRecord, ReportedCopyRecord, RolloutOwnerRecord, RolloutRecord } from '../store/store.js';
import type { ClusterRecord } from '../store/store.js';
import { HttpError } from '../http/http-replies.js';
import type { Logger } from '../../log/run-log.js';
import { parseLabelSelector, type LabelSelector } from '../../kube/label-selector.js';
import type {
  ApplyResult,
  ClusterRowView,
  DeleteResult,
  PhaseCounts,
  RolloutListItem,
  RolloutStatusView,
  WaveView,
} from '../../rollout/api.js';
import {
  newProgress,
  recordReport,
  resumeHalted,
  stepRollout,
  type ClusterPhase,
  type ClusterProgress,
  type CopyReport,
  type Delivery,
  type ObservedCluster,
  type RollbackRecord,
  type RolloutProgress,
} from '../../rollout/progress.js';
import { placedClusters, placementOutsideScope } from '../../rollout/placement.js';
import { summarize } from '../../rollout/readiness.js';
import { renderCopy, type RenderedCopy } from '../../rollout/render.js';
import { parseRollout, type RolloutSpec } from '../../rollout/spec.js';
import type { CopyMessage, RemoveMessage, ReportMessage, RolloutOwner } from '../../rollout/wire.js';
import { MAX_STORED_ROLLOUT_REVISIONS, ROLLOUT_PASS_INTERVAL_MS } from '../limits.js';
import { refuseRolloutChange, removalIdentity } from './rollout-permissions.js';
import { loadStoredRollout, RolloutQuarantine } from './stored-rollout.js';
import { rollbackFor } from '../../rollout/rollback.js';
import { isOwedOnReturn } from '../../rollout/catch-up.js';
import { withClusterFacts } from './rollout-rows.js';
import { checkDocumentLimits } from '../http/document-limits.js';
import type { QuarantinedRollout } from '../../rollout/api.js';

/** What happened to one message sent to an agent. */
export type DeliveryOutcome =
  { status: 'delivered' } | { status: 'disconnected' } | { status: 'failed'; message: string };

/** Where copies and removals go: the clusters' tunnels in the hub, a fake in tests. */
export interface RolloutDelivery {
  sendCopy(cluster: string, message: CopyMessage): Promise<DeliveryOutcome>;
  sendRemove(cluster: string, message: RemoveMessage): Promise<DeliveryOutcome>;
}

/** The controller's clock and timers (injected: tests set the time instead of waiting). */
export interface RolloutClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The system clock and timers (unref'd: the controller never keeps the process alive). */
export const systemRolloutClock: RolloutClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Options of {@link RolloutController.start}. */
export interface RolloutControllerOptions {
  store: HubStore;
  delivery: RolloutDelivery;
  logger: Logger;
  clock?: RolloutClock;
  /** Shortest time between passes; {@link ROLLOUT_PASS_INTERVAL_MS} by default (tests use 0). */
  passIntervalMs?: number;
  /** Clusters connected when the controller starts. */
  connected?: Iterable<string>;
}

/** Who asks: the user whose token the operator API checked. */
export interface RolloutActor extends RolloutOwnerRecord {
  isAdmin: boolean;
}

/** One rollout as the controller holds it. */
interface LiveRollout {
  record: RolloutRecord;
  spec: RolloutSpec;
  /** The current revision's document, for `apply`'s "unchanged" check. */
  documentText: string;
  /** What each cluster last reported. */
  reports: Map<string, ReportedCopyRecord>;
  /** Clusters handed a copy whose acceptance this process has not seen (resent when they connect). */
  unconfirmed: Set<string>;
  /** What the status view showed at the last version bump. */
  viewKey: string;
  /**
   * The full status view as of the last pass, at `record.statusVersion`:
   * what every status request and watcher is answered from, so that many
   * watchers cost one computation per change, not one each.
   */
  view?: RolloutStatusView;
}

const PHASES: readonly ClusterPhase[] = [
  'waiting',
  'held',
  'offline-pending',
  'applying',
  'progressing',
  'ready',
  'failed',
];

function zeroCounts(): PhaseCounts {
  return Object.fromEntries(PHASES.map((phase) => [phase, 0])) as PhaseCounts;
}

/** JSON with sorted keys: equal documents give equal text whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function ownerOf(record: RolloutOwnerRecord): RolloutOwner {
  return { user: record.user, groups: [...record.groups] };
}

/** The hub's rollout controller. */
export class RolloutController {
  readonly #store: HubStore;
  readonly #delivery: RolloutDelivery;
  readonly #logger: Logger;
  readonly #clock: RolloutClock;
  readonly #passIntervalMs: number;
  readonly #rollouts = new Map<string, LiveRollout>();
  #clusters = new Map<string, ClusterRecord>();
  readonly #connected = new Set<string>();
  /** Per cluster, how many times it connected: a delivery's outcome speaks only of the tunnel it was sent on. */
  readonly #connections = new Map<string, number>();
  /** Stored rollouts that could not be loaded at start (stored-rollout.ts): kept out of every pass. */
  readonly #quarantined = new RolloutQuarantine();
  /** Removals owed, by cluster, then rollout. */
  readonly #pendingRemovals = new Map<string, Map<string, PendingRemovalRecord>>();

  // What the next pass has to do.
  readonly #dirty = new Set<string>();
  #isAllDirty = false;
  #mustReloadClusters = false;
  readonly #justConnected = new Set<string>();
  readonly #dirtyReports = new Map<string, ReportedCopyRecord>();
  /** By rollout, reports recorded since its record was last written: settled by the next write of it. */
  readonly #unwritten = new Map<string, PromiseWithResolvers<void>[]>();

  #passTimer: unknown;
  #isPassScheduled = false;
  #isPassRunning = false;
  #lastPassAt = Number.NEGATIVE_INFINITY;
  #wakeTimer: unknown;
  #lock: Promise<unknown> = Promise.resolve();
  #idleWaiters: (() => void)[] = [];
  readonly #statusWaiters = new Map<string, Set<() => void>>();
  /** Per cluster, the tail of its delivery queue. */
  readonly #queues = new Map<string, Promise<void>>();
  #inFlight = 0;
  #isStopped = false;

  private constructor(options: RolloutControllerOptions) {
    this.#store = options.store;
    this.#delivery = options.delivery;
    this.#logger = options.logger;
    this.#clock = options.clock ?? systemRolloutClock;
    this.#passIntervalMs = options.passIntervalMs ?? ROLLOUT_PASS_INTERVAL_MS;
    for (const cluster of options.connected ?? []) this.#connected.add(cluster);
  }

  /** Loads every rollout, report and owed removal from the store and runs a first pass. */
  static async start(options: RolloutControllerOptions): Promise<RolloutController> {
    const controller = new RolloutController(options);
    await controller.#load();
    controller.#markAll();
    return controller;
  }

  async #load(): Promise<void> {
    const store = this.#store;
    this.#clusters = new Map((await store.listClusters()).map((cluster) => [cluster.name, cluster]));
    for (const record of await store.listRollouts()) {
      const loaded = await loadStoredRollout(store, record);
      if (!loaded.ok) {
        // Quarantined, never fatal: one document must not keep the hub from serving everyone else.
        this.#quarantined.add(record, loaded.quarantine);
        this.#logger.error(
          `rollout ${record.name}: quarantined, its stored revision ${record.revision} cannot be loaded: ` +
            `${loaded.quarantine.reason} (delete it, or apply a fixed revision after deleting it)`,
        );
        continue;
      }
      const { spec, document } = loaded;
      const reports = new Map(loaded.reports.map((r) => [r.cluster, r]));
      // After a restart no delivery is known to have been accepted: clusters still applying get their copy again.
      const unconfirmed = new Set(
        Object.entries(record.progress.clusters)
          .filter(([, cluster]) => cluster.phase === 'applying')
          .map(([name]) => name),
      );
      const live: LiveRollout = {
        record,
        spec,
        documentText: canonicalJson(document),
        reports,
        unconfirmed,
        viewKey: '',
      };
      live.viewKey = this.#viewKey(live);
      this.#rollouts.set(record.name, live);
    }
    for (const removal of await store.listPendingRemovals()) this.#rememberRemoval(removal);
    // Clusters connected before the controller started get what they are owed.
    for (const cluster of this.#connected) this.#justConnected.add(cluster);
  }

  // ---------------------------------------------------------------- events

  /** A cluster's tunnel was accepted: it gets its current copies and owed removals within the next pass. */
  clusterConnected(cluster: string): void {
    this.#connected.add(cluster);
    this.#connections.set(cluster, (this.#connections.get(cluster) ?? 0) + 1);
    this.#justConnected.add(cluster);
    this.#markAll();
  }

  /** A cluster's tunnel is gone. */
  clusterDisconnected(cluster: string): void {
    this.#connected.delete(cluster);
    this.#justConnected.delete(cluster);
    this.#markAll();
  }

  /** Clusters were registered or deleted, or a hold or properties changed: read them again. */
  clustersChanged(): void {
    this.#mustReloadClusters = true;
    this.#markAll();
  }

  /**
   * A report line from `cluster`'s agent. The cluster is the tunnel's, never
   * what the line claims: an agent reports for its own cluster only.
   *
   * Resolves once what the line changed is written to the store (with the
   * next pass), rejects if that write fails or the controller stopped: the
   * line is acknowledged to the agent only then, so a line this controller
   * took but never wrote (its replica died, the store refused) is sent again
   * by the agent, to whichever replica leads next.
   */
  report(cluster: string, message: ReportMessage): Promise<void> {
    const written = this.#record(cluster, message);
    // Callers that do not wait for the write must not see its failure as unhandled.
    written.catch(() => undefined);
    return written;
  }

  #record(cluster: string, message: ReportMessage): Promise<void> {
    if (this.#isStopped) return Promise.reject(new Error('the rollout controller has stopped'));
    if (message.kind === 'removed') {
      const owed = this.#pendingRemovals.get(cluster)?.get(message.rollout);
      if (owed === undefined) return Promise.resolve();
      return this.#forgetRemoval(owed).catch((error: Error) => {
        this.#logger.warn(`rollout ${message.rollout}: forgetting the removal from ${cluster}: ${error.message}`);
        throw error;
      });
    }
    const live = this.#rollouts.get(message.rollout);
    if (live === undefined) return Promise.resolve();
    const before = live.record.progress;
    const report = {
      cluster,
      revision: message.revision,
      readiness: message.readiness,
      ...(message.message === undefined ? {} : { message: message.message }),
    };
    if (before.clusters[cluster]?.targetRevision === message.revision) live.unconfirmed.delete(cluster);
    recordOne(live, report);
    if (live.record.progress.clusters[cluster] !== undefined) {
      const reported: ReportedCopyRecord = {
        rollout: message.rollout,
        cluster,
        revision: message.revision,
        objects: message.objects,
      };
      live.reports.set(cluster, reported);
      this.#dirtyReports.set(`${message.rollout}\u0000${cluster}`, reported);
    }
    const written = Promise.withResolvers<void>();
    const waiters = this.#unwritten.get(message.rollout) ?? [];
    waiters.push(written);
    this.#unwritten.set(message.rollout, waiters);
    this.#mark(message.rollout);
    return written.promise;
  }

  // ------------------------------------------------------------ operations

  /** The rollouts an actor may see: all for an admin, for a scoped user those whose placement stays in their clusters. */
  #isVisible(live: LiveRollout, actor: RolloutActor): boolean {
    if (actor.isAdmin) return true;
    return this.outsideScope(live.spec, actor.clustersSelector) === undefined;
  }

  /** Why a placement reaches outside a scope, or undefined. */
  outsideScope(spec: RolloutSpec, clustersSelector: string): string | undefined {
    return placementOutsideScope(spec.placement, clustersSelector, [...this.#clusters.values()]);
  }

  #visible(name: string, actor: RolloutActor): LiveRollout {
    const live = this.#rollouts.get(name);
    if (live === undefined || !this.#isVisible(live, actor)) {
      throw new HttpError(404, 'E_ROLLOUT_NOT_FOUND', `no rollout named "${name}"`);
    }
    return live;
  }

  /** The clusters as the core sees them now. */
  observedClusters(): ObservedCluster[] {
    return [...this.#clusters.values()].map((cluster) => ({
      name: cluster.name,
      labels: cluster.labels,
      properties: cluster.properties ?? {},
      isConnected: this.#connected.has(cluster.name),
      isHeld: cluster.hold !== undefined,
    }));
  }

  /** Stored rollouts quarantined at start that the actor may see: all for an admin, their own for a user. */
  quarantined(actor: RolloutActor): QuarantinedRollout[] {
    return this.#quarantined.visible(actor);
  }

  /** How many stored rollouts are quarantined (the hub's metric). */
  get quarantinedCount(): number {
    return this.#quarantined.size;
  }

  /** Refuses a change of a rollout the actor may see but does not own (rollout-permissions.ts). */
  #refuseUnlessMayChange(live: LiveRollout, actor: RolloutActor, action: string): void {
    const reason = refuseRolloutChange(actor, { name: live.record.name, owner: live.record.owner.user }, action);
    if (reason !== undefined) throw new HttpError(403, 'E_ROLLOUT_NOT_OWNER', reason);
  }

  /** The stored document of a rollout the actor may see. */
  async document(name: string, actor: RolloutActor): Promise<{ revision: number; document: unknown }> {
    this.#quarantined.refuse(name, actor);
    const live = this.#visible(name, actor);
    const stored = await this.#store.getRolloutRevision(name, live.record.revision);
    return { revision: live.record.revision, document: stored?.document };
  }

  /** What {@link RolloutController.apply} would answer, changing nothing (a dry run). */
  preview(document: unknown, spec: RolloutSpec, actor: RolloutActor): ApplyResult {
    this.#quarantined.refuse(spec.name, actor);
    const existing = this.#rollouts.get(spec.name);
    if (existing !== undefined && !this.#isVisible(existing, actor)) throw this.#taken(spec.name);
    if (existing !== undefined) this.#refuseUnlessMayChange(existing, actor, 'apply a new revision of');
    const isUnchanged = existing !== undefined && existing.documentText === canonicalJson(document);
    const current = existing?.record.revision ?? 0;
    return { name: spec.name, revision: isUnchanged ? current : current + 1, isUnchanged, isCreated: !existing };
  }

  #taken(name: string): HttpError {
    return new HttpError(
      403,
      'E_HUB_FORBIDDEN',
      `a rollout named "${name}" exists and reaches clusters outside yours; choose another name`,
    );
  }

  /**
   * Creates or updates a rollout (a new revision, unless the document is
   * unchanged). The caller has parsed the document and checked the actor's
   * scope against its placement.
   */
  apply(document: unknown, spec: RolloutSpec, actor: RolloutActor): Promise<ApplyResult> {
    return this.#exclusive(async () => {
      this.#quarantined.refuse(spec.name, actor);
      const existing = this.#rollouts.get(spec.name);
      if (existing !== undefined && !this.#isVisible(existing, actor)) throw this.#taken(spec.name);
      if (existing !== undefined) this.#refuseUnlessMayChange(existing, actor, 'apply a new revision of');
      const documentText = canonicalJson(document);
      if (existing !== undefined && existing.documentText === documentText) {
        return { name: spec.name, revision: existing.record.revision, isUnchanged: true, isCreated: false };
      }
      const live = await this.#newRevision(existing, spec, document, documentText, actor);
      return { name: spec.name, revision: live.record.revision, isUnchanged: false, isCreated: existing === undefined };
    });
  }

  async #newRevision(
    existing: LiveRollout | undefined,
    spec: RolloutSpec,
    document: unknown,
    documentText: string,
    actor: RolloutActor,
  ): Promise<LiveRollout> {
    const now = new Date(this.#clock.now()).toISOString();
    const revision = (existing?.record.revision ?? 0) + 1;
    const owner: RolloutOwnerRecord = {
      user: actor.user,
      groups: [...actor.groups],
      clustersSelector: actor.clustersSelector,
    };
    const record: RolloutRecord = {
      name: spec.name,
      owner,
      revision,
      progress: newProgress(revision, existing?.record.progress),
      statusVersion: (existing?.record.statusVersion ?? 0) + 1,
      createdAt: existing?.record.createdAt ?? now,
      updatedAt: now,
    };
    // Clusters that ran the old revision and that the new one no longer places lose their copy.
    const placed = new Set(placedClusters(spec.placement, this.observedClusters(), scopeOf(owner.clustersSelector)));
    const dropped = Object.entries(existing?.record.progress.clusters ?? {})
      .filter(([name, cluster]) => cluster.targetRevision !== undefined && !placed.has(name))
      .map(([name]) => name);
    await this.#store.putRollout(
      record,
      { name: spec.name, revision, document, appliedBy: actor.user, appliedAt: now },
      MAX_STORED_ROLLOUT_REVISIONS,
    );
    const live: LiveRollout = {
      record,
      spec,
      documentText,
      reports: existing?.reports ?? new Map(),
      unconfirmed: new Set(),
      viewKey: '',
    };
    live.viewKey = this.#viewKey(live);
    this.#rollouts.set(spec.name, live);
    // The applier's revision left these clusters: the removal is theirs, and runs as them.
    await this.#owe(dropped.map((cluster) => ({ rollout: spec.name, cluster, owner: removalIdentity(actor) })));
    this.#logger.info(`rollout ${spec.name}: revision ${revision} applied by ${actor.user}`);
    this.#wakeWaiters(spec.name);
    this.#mark(spec.name);
    return live;
  }

  /** Pause, resume or abort. */
  command(name: string, command: 'pause' | 'resume' | 'abort', actor: RolloutActor): Promise<RolloutStatusView> {
    return this.#exclusive(async () => {
      this.#quarantined.refuse(name, actor);
      const live = this.#visible(name, actor);
      this.#refuseUnlessMayChange(live, actor, command);
      const progress = live.record.progress;
      const state = progress.state;
      let next: RolloutProgress['state'] = state;
      if (command === 'abort') next = 'aborted';
      else if (command === 'pause') {
        // A complete rollout may be paused too: its next revision, and clusters that register or are
        // released later, then wait until it is resumed (a freeze before a change window).
        if (state === 'progressing' || state === 'complete') next = 'paused';
        else if (state !== 'paused') throw this.#cannot(name, command, state);
      } else if (state === 'paused' || state === 'halted') next = 'progressing';
      else if (state !== 'progressing') throw this.#cannot(name, command, state);
      if (next !== state) {
        // A halted rollout resumed tries its failed clusters again: the operator has fixed what failed.
        live.record.progress = state === 'halted' ? resumeHalted(progress) : { ...progress, state: next };
        delete live.view;
        await this.#save([live]);
        this.#logger.info(`rollout ${name}: ${command} by ${actor.user}`);
        this.#mark(name);
      }
      return this.#statusView(live, false);
    });
  }

  #cannot(name: string, command: string, state: string): HttpError {
    const hint =
      state === 'aborted'
        ? ': apply a fixed revision or undo to the previous one'
        : state === 'halted'
          ? ': resume it once what failed is fixed, apply a fixed revision, or undo to the previous one'
          : state === 'complete'
            ? ': it has nothing left to do'
            : '';
    return new HttpError(409, 'E_ROLLOUT_STATE', `rollout "${name}" is ${state}; cannot ${command} it${hint}`);
  }

  /** Applies the revision before the current one again, as a new revision. */
  undo(name: string, actor: RolloutActor): Promise<RolloutStatusView> {
    return this.#exclusive(async () => {
      this.#quarantined.refuse(name, actor);
      const live = this.#visible(name, actor);
      this.#refuseUnlessMayChange(live, actor, 'undo');
      const revisions = await this.#store.listRolloutRevisions(name);
      const previous = revisions.filter((revision) => revision < live.record.revision).at(-1);
      const stored = previous === undefined ? undefined : await this.#store.getRolloutRevision(name, previous);
      if (stored === undefined) {
        throw new HttpError(409, 'E_ROLLOUT_NO_PREVIOUS', `rollout "${name}" has no earlier revision to go back to`);
      }
      let spec: RolloutSpec;
      try {
        // An earlier revision stored before the hub's document limits is held to them before anything walks it.
        checkDocumentLimits(stored.document, `revision ${previous}'s document`);
        spec = parseRollout(stored.document, { isStrict: false });
      } catch (error) {
        throw new HttpError(
          409,
          'E_ROLLOUT_NO_PREVIOUS',
          `cannot undo to revision ${previous}: ${(error as Error).message}`,
        );
      }
      const reason = actor.isAdmin ? undefined : this.outsideScope(spec, actor.clustersSelector);
      if (reason !== undefined)
        throw new HttpError(403, 'E_HUB_FORBIDDEN', `cannot undo to revision ${previous}: ${reason}`);
      const next = await this.#newRevision(live, spec, stored.document, canonicalJson(stored.document), actor);
      return this.#statusView(next, false);
    });
  }

  /**
   * `onFailure: rollback`: applies the document of the revision before the
   * halted one again, as a new revision owned (and so written on the
   * clusters) by the rollout's owner, whose policy it is. Without an earlier
   * revision, or with one that cannot be read, the rollout stays halted and
   * says why.
   */
  async #rollBack(live: LiveRollout, rollback: RollbackRecord): Promise<void> {
    const name = live.record.name;
    const keepHalted = (why: string): void => {
      live.record.progress.haltReason = `${rollback.reason}; not rolled back: ${why}`;
      delete live.view;
      this.#logger.warn(`rollout ${name}: revision ${rollback.revision} halted and cannot be rolled back: ${why}`);
      this.#mark(name);
    };
    const revisions = await this.#store.listRolloutRevisions(name);
    const previous = revisions.filter((revision) => revision < live.record.revision).at(-1);
    const stored = previous === undefined ? undefined : await this.#store.getRolloutRevision(name, previous);
    if (stored === undefined) return keepHalted('there is no earlier revision');
    let spec: RolloutSpec;
    try {
      checkDocumentLimits(stored.document, `revision ${previous}'s document`);
      spec = parseRollout(stored.document, { isStrict: false });
    } catch (error) {
      return keepHalted((error as Error).message);
    }
    const { owner } = live.record;
    const actor: RolloutActor = { ...owner, groups: [...owner.groups], isAdmin: false };
    const next = await this.#newRevision(live, spec, stored.document, canonicalJson(stored.document), actor);
    next.record.progress.rollbackOf = rollback;
    next.viewKey = this.#viewKey(next);
    await this.#store.putRollouts([next.record]);
    this.#logger.warn(
      `rollout ${name}: revision ${rollback.revision} halted (${rollback.reason}); rolled back to revision ` +
        `${previous}'s document as revision ${next.record.revision}`,
    );
  }

  /**
   * Deletes a rollout: every cluster that may hold its copy is owed a
   * removal (stored with the deletion), sent now to the connected ones; the
   * others get it when they return.
   */
  async delete(name: string, actor: RolloutActor): Promise<DeleteResult> {
    const owed = await this.#exclusive(async () => {
      const quarantined = this.#quarantined.record(name);
      const record = quarantined ?? this.#visible(name, actor).record;
      const live = this.#rollouts.get(name);
      const reason = refuseRolloutChange(actor, { name, owner: record.owner.user }, 'delete');
      if (reason !== undefined) {
        // A quarantined rollout of another owner is not shown to a user: nor is its existence told here.
        if (quarantined !== undefined) throw new HttpError(404, 'E_ROLLOUT_NOT_FOUND', `no rollout named "${name}"`);
        throw new HttpError(403, 'E_ROLLOUT_NOT_OWNER', reason);
      }
      // The removal is the deleter's action: it runs as them, so the cluster's RBAC decides what they may remove.
      const identity = removalIdentity(actor);
      const reached = new Set(
        Object.entries(record.progress.clusters)
          .filter(([, progress]) => progress.targetRevision !== undefined)
          .map(([cluster]) => cluster),
      );
      for (const cluster of live?.reports.keys() ?? []) if (this.#clusters.has(cluster)) reached.add(cluster);
      const removals = [...reached].sort().map((cluster) => ({ rollout: name, cluster, owner: identity }));
      await this.#store.deleteRollout(name, removals);
      this.#rollouts.delete(name);
      this.#quarantined.delete(name);
      // Reports of a deleted rollout are moot: the agent need not send them again.
      for (const waiter of this.#takeUnwritten(name)) waiter.resolve();
      for (const removal of removals) this.#rememberRemoval(removal);
      this.#wakeWaiters(name);
      this.#logger.info(`rollout ${name}: deleted by ${actor.user}; ${removals.length} clusters to clean`);
      return removals;
    });
    // Sent outside the lock: a slow agent must not hold up every other rollout.
    const taken = await Promise.all(
      owed.map(async (removal) => this.#connected.has(removal.cluster) && (await this.#sendRemoval(removal))),
    );
    return {
      name,
      removed: owed.filter((_, index) => taken[index]).map((removal) => removal.cluster),
      pendingRemovals: owed.filter((_, index) => !taken[index]).map((removal) => removal.cluster),
    };
  }

  // ----------------------------------------------------------------- views

  /** The rollouts an actor may see. */
  list(actor: RolloutActor): RolloutListItem[] {
    return [...this.#rollouts.values()]
      .filter((live) => this.#isVisible(live, actor))
      .sort((a, b) => (a.record.name < b.record.name ? -1 : 1))
      .map((live) => {
        const counts = zeroCounts();
        const clusters = Object.values(live.record.progress.clusters);
        for (const cluster of clusters) counts[cluster.phase] += 1;
        return {
          name: live.record.name,
          revision: live.record.revision,
          state: live.record.progress.state,
          owner: live.record.owner.user,
          clusters: clusters.length,
          counts,
          updatedAt: live.record.updatedAt,
        };
      });
  }

  /** The status of a rollout the actor may see. */
  status(name: string, actor: RolloutActor, withClusters: boolean): RolloutStatusView {
    this.#quarantined.refuse(name, actor);
    const live = this.#visible(name, actor);
    const view = live.view?.statusVersion === live.record.statusVersion ? live.view : this.#statusView(live, true);
    if (withClusters) return view;
    const { clusters: _rows, ...withoutRows } = view;
    return withoutRows;
  }

  /**
   * Waits until the rollout's status version differs from `fromVersion`, it
   * is deleted, `timeoutMs` pass or `signal` aborts (the client went away).
   */
  async waitForChange(name: string, fromVersion: number, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    const live = this.#rollouts.get(name);
    if (live === undefined || live.record.statusVersion !== fromVersion || signal?.aborted) return;
    await new Promise<void>((resolve) => {
      const waiters = this.#statusWaiters.get(name) ?? new Set<() => void>();
      this.#statusWaiters.set(name, waiters);
      const done = (): void => {
        this.#clock.clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        waiters.delete(done);
        if (waiters.size === 0 && this.#statusWaiters.get(name) === waiters) this.#statusWaiters.delete(name);
        resolve();
      };
      const timer = this.#clock.setTimeout(done, timeoutMs);
      signal?.addEventListener('abort', done);
      waiters.add(done);
    });
  }

  #wakeWaiters(name: string): void {
    for (const wake of [...(this.#statusWaiters.get(name) ?? [])]) wake();
  }

  #statusView(live: LiveRollout, withClusters: boolean): RolloutStatusView {
    const { record } = live;
    const { progress } = record;
    const entries = Object.entries(progress.clusters).sort(([a], [b]) => (a < b ? -1 : 1));
    const counts = zeroCounts();
    const waveCounts: PhaseCounts[] = [];
    for (const [, cluster] of entries) {
      counts[cluster.phase] += 1;
      const perWave = (waveCounts[cluster.wave] ??= zeroCounts());
      perWave[cluster.phase] += 1;
    }
    const waves: WaveView[] = [];
    for (let index = 0; index < waveCounts.length; index += 1) {
      const waveCount = waveCounts[index] ?? zeroCounts();
      let state: WaveView['state'] = 'waiting';
      if (progress.state === 'complete' || index < progress.currentWave) state = 'done';
      else if (index === progress.currentWave) state = progress.waveDoneSince === undefined ? 'started' : 'soaking';
      waves.push({
        index,
        clusters: Object.values(waveCount).reduce((total, n) => total + n, 0),
        counts: waveCount,
        state,
      });
    }
    const placed = new Set(entries.map(([name]) => name));
    const copies = [...live.reports.values()]
      .filter((report) => placed.has(report.cluster))
      .map((report) =>
        report.objects.map((object) => ({
          apiVersion: object.apiVersion,
          kind: object.kind,
          metadata: { name: object.name, ...(object.namespace === undefined ? {} : { namespace: object.namespace }) },
          ...(object.status === undefined ? {} : { status: object.status }),
        })),
      );
    const view: RolloutStatusView = {
      name: record.name,
      revision: record.revision,
      state: progress.state,
      ...(progress.haltReason === undefined ? {} : { haltReason: progress.haltReason }),
      ...(progress.rollbackOf === undefined ? {} : { rollbackOf: progress.rollbackOf }),
      statusVersion: record.statusVersion,
      owner: record.owner.user,
      currentWave: progress.currentWave,
      waves,
      counts,
      summaries: summarize(live.spec.summaries, copies),
      updatedAt: record.updatedAt,
    };
    if (withClusters) {
      view.clusters = entries.map(([cluster, state]): ClusterRowView => {
        const row: ClusterRowView = { cluster, wave: state.wave, phase: state.phase };
        if (state.targetRevision !== undefined) row.targetRevision = state.targetRevision;
        if (state.message !== undefined) row.message = state.message;
        // A cluster's last report is not its state now: a ready cluster that is offline says so.
        const isReported = state.phase === 'ready' || state.phase === 'progressing' || state.phase === 'applying';
        if (isReported && !this.#connected.has(cluster)) {
          row.message = `not connected to the hub now; last known ${state.phase}${state.message ? `: ${state.message}` : ''}`;
        }
        return withClusterFacts(row, this.#clusters.get(cluster), this.#connected.has(cluster));
      });
    }
    return view;
  }

  /** What a status view shows, without its version and time: a change of it bumps the version. */
  #viewKey(live: LiveRollout): string {
    const view = this.#statusView(live, true);
    const { statusVersion: _version, updatedAt: _at, ...shown } = view;
    live.view = view;
    return JSON.stringify(shown);
  }

  // ---------------------------------------------------------------- passes

  #mark(name: string): void {
    this.#dirty.add(name);
    this.#schedule();
  }

  #markAll(): void {
    this.#isAllDirty = true;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#isStopped || this.#isPassScheduled || this.#isPassRunning) return;
    this.#isPassScheduled = true;
    const delay = Math.max(0, this.#lastPassAt + this.#passIntervalMs - this.#clock.now());
    const run = (): void => {
      this.#passTimer = undefined;
      this.#isPassScheduled = false;
      void this.#exclusive(() => this.#pass()).catch((error: Error) =>
        this.#logger.error(`rollout controller pass failed: ${error.message}`),
      );
    };
    if (delay === 0 || this.#passIntervalMs === 0) setImmediate(run);
    else this.#passTimer = this.#clock.setTimeout(run, delay);
  }

  /** Runs `work` after every operation and pass before it: one writer of the rollouts at a time. */
  #exclusive<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#lock.then(work);
    this.#lock = result.catch(() => undefined);
    return result;
  }

  async #pass(): Promise<void> {
    if (this.#isStopped) return;
    this.#isPassRunning = true;
    this.#lastPassAt = this.#clock.now();
    try {
      if (this.#mustReloadClusters) {
        this.#mustReloadClusters = false;
        const previous = this.#clusters;
        this.#clusters = new Map((await this.#store.listClusters()).map((cluster) => [cluster.name, cluster]));
        this.#refreshChangedCopies(previous);
        // A deleted cluster is owed nothing: its certificate is revoked, its agent never returns.
        for (const [cluster, owed] of this.#pendingRemovals) {
          if (this.#clusters.has(cluster)) continue;
          for (const removal of [...owed.values()]) await this.#forgetRemoval(removal);
        }
        // A released cluster now gets the removals its hold kept back.
        for (const [cluster, owed] of this.#pendingRemovals) {
          const isReleased =
            previous.get(cluster)?.hold !== undefined && this.#clusters.get(cluster)?.hold === undefined;
          if (isReleased && this.#connected.has(cluster))
            for (const removal of owed.values()) void this.#sendRemoval(removal);
        }
      }
      const names = this.#isAllDirty ? [...this.#rollouts.keys()] : [...this.#dirty];
      this.#isAllDirty = false;
      this.#dirty.clear();
      const connectedNow = [...this.#justConnected];
      this.#justConnected.clear();
      const observed = this.observedClusters();
      const now = this.#clock.now();
      const changed: LiveRollout[] = [];
      const owed: PendingRemovalRecord[] = [];
      // Clusters that just connected first get what they were handed while away (re-rendered: the latest)
      // and the removals they are owed; the step below then hands out what is new.
      const observedByName = new Map(observed.map((seen) => [seen.name, seen]));
      for (const cluster of connectedNow) this.#catchUp(cluster, observedByName, names);
      const rollbacks: { live: LiveRollout; rollback: RollbackRecord }[] = [];
      for (const name of names) {
        const live = this.#rollouts.get(name);
        if (live === undefined) continue;
        const before = live.record.progress;
        // A step that starts the next wave hands out its copies only in the step after: step again then.
        for (let steps = 0; steps <= live.spec.strategy.waves.length; steps += 1) {
          const wave = live.record.progress.currentWave;
          const out = stepRollout({
            spec: live.spec,
            progress: live.record.progress,
            clusters: observed,
            scope: scopeOf(live.record.owner.clustersSelector),
            now,
          });
          live.record.progress = out.progress;
          for (const delivery of out.deliveries) this.#deliver(live, delivery);
          for (const cluster of out.removals) {
            owed.push({ rollout: name, cluster, owner: ownerOf(live.record.owner) });
            live.unconfirmed.delete(cluster);
          }
          if (out.progress.currentWave === wave) break;
        }
        const rollback = rollbackFor(live.spec, before, live.record.progress);
        if (rollback !== undefined) rollbacks.push({ live, rollback });
        changed.push(live);
      }
      for (const live of changed) {
        const key = this.#viewKey(live);
        if (key !== live.viewKey) {
          live.viewKey = key;
          live.record.statusVersion += 1;
          live.record.updatedAt = new Date(now).toISOString();
          live.view = { ...(live.view as RolloutStatusView), statusVersion: live.record.statusVersion };
          live.view.updatedAt = live.record.updatedAt;
          this.#wakeWaiters(live.record.name);
        }
      }
      await this.#save(changed);
      if (owed.length > 0) await this.#owe(owed);
      // In the same pass as the halt: the updated clusters are sent their previous copy at once.
      for (const { live, rollback } of rollbacks) await this.#rollBack(live, rollback);
      this.#scheduleWake();
    } finally {
      this.#isPassRunning = false;
      if (!this.#isStopped && (this.#isAllDirty || this.#dirty.size > 0 || this.#justConnected.size > 0)) {
        this.#schedule();
      } else if (this.#inFlight === 0) this.#notifyIdle();
    }
  }

  /**
   * Clusters whose labels or properties changed may need another copy (a
   * `${property:…}` or a patch by selector reads them): each one whose copy
   * renders differently now, or not at all, waits for a fresh copy, which
   * the step hands out within the rollout's `maxUnavailable`.
   */
  #refreshChangedCopies(previous: ReadonlyMap<string, ClusterRecord>): void {
    const factsOf = (cluster: ClusterRecord | undefined): string =>
      canonicalJson({ labels: cluster?.labels ?? {}, properties: cluster?.properties ?? {} });
    const changed = [...this.#clusters.values()].filter(
      (cluster) => previous.has(cluster.name) && factsOf(previous.get(cluster.name)) !== factsOf(cluster),
    );
    if (changed.length === 0) return;
    for (const live of this.#rollouts.values()) {
      for (const cluster of changed) {
        const progress = live.record.progress.clusters[cluster.name];
        if (progress?.targetRevision === undefined) continue;
        const rendered = renderCopy(live.spec, live.record.revision, {
          name: cluster.name,
          labels: cluster.labels,
          properties: cluster.properties ?? {},
        });
        if (rendered.ok && rendered.copy.revision === progress.targetRevision) continue;
        live.record.progress.clusters[cluster.name] = { wave: progress.wave, phase: 'waiting' };
        live.unconfirmed.delete(cluster.name);
      }
    }
  }

  /** Writes rollout records and the reports gathered since the last write. */
  async #save(records: readonly LiveRollout[]): Promise<void> {
    const reports = [...this.#dirtyReports.values()].filter((report) => this.#rollouts.has(report.rollout));
    this.#dirtyReports.clear();
    // The reports recorded so far are in what is written now; later ones wait for the next write.
    const waiters = records.flatMap((live) => this.#takeUnwritten(live.record.name));
    try {
      await this.#store.putRollouts(records.map((live) => live.record));
      await this.#store.putReportedCopies(reports);
    } catch (error) {
      for (const waiter of waiters) waiter.reject(error);
      throw error;
    }
    for (const waiter of waiters) waiter.resolve();
  }

  #takeUnwritten(rollout: string): PromiseWithResolvers<void>[] {
    const waiters = this.#unwritten.get(rollout) ?? [];
    this.#unwritten.delete(rollout);
    return waiters;
  }

  /** Sends what a cluster that just connected is owed. */
  #catchUp(cluster: string, observed: ReadonlyMap<string, ObservedCluster>, names: string[]): void {
    for (const removal of this.#pendingRemovals.get(cluster)?.values() ?? []) void this.#sendRemoval(removal);
    const facts = observed.get(cluster);
    if (facts === undefined || facts.isHeld) return;
    for (const live of this.#rollouts.values()) {
      const progress = live.record.progress.clusters[cluster];
      if (progress === undefined) continue;
      const owed = { isUnconfirmed: live.unconfirmed.has(cluster), lastReported: live.reports.get(cluster)?.revision };
      if (!isOwedOnReturn(progress, owed)) continue;
      if (live.record.progress.state === 'aborted') continue;
      const rendered = renderCopy(live.spec, live.record.revision, facts);
      if (rendered.ok && rendered.copy.revision === progress.targetRevision) {
        if (progress.phase !== 'applying') {
          // Failed or left pending while away for a copy it never ran: it gets the copy now, with a fresh deadline.
          const { message: _message, ...rest } = progress;
          live.record.progress.clusters[cluster] = { ...rest, phase: 'applying', deliveredAt: this.#clock.now() };
          if (!names.includes(live.record.name)) names.push(live.record.name);
        }
        this.#deliver(live, { cluster, copy: rendered.copy });
      } else {
        // The cluster's facts changed since: it waits for a fresh copy, in its turn.
        const { targetRevision: _target, deliveredAt: _at, ...rest } = progress;
        live.record.progress.clusters[cluster] = { ...rest, phase: 'waiting' };
        live.unconfirmed.delete(cluster);
        if (!names.includes(live.record.name)) names.push(live.record.name);
      }
    }
  }

  /** Hands a copy to the cluster's queue (connected) or keeps it for the cluster's return. */
  #deliver(live: LiveRollout, delivery: Delivery): void {
    const { cluster, copy } = delivery;
    const name = live.record.name;
    live.unconfirmed.add(cluster);
    if (!this.#connected.has(cluster)) return;
    this.#enqueue(cluster, async () => {
      const connection = this.#connections.get(cluster);
      const current = this.#rollouts.get(name);
      // Only the cluster's current target goes out: a newer revision or a deletion since makes this one moot,
      // and a hold since means no change until it is released (the step then hands the copy out again).
      if (current === undefined || current.record.progress.clusters[cluster]?.targetRevision !== copy.revision) return;
      if (this.#clusters.get(cluster)?.hold !== undefined) return;
      const message: CopyMessage = { rollout: name, owner: ownerOf(current.record.owner), copy };
      const outcome = await this.#delivery.sendCopy(cluster, message);
      // No tunnel took it, and the cluster has not connected again since: it is offline, whether or not its
      // tunnel's end was told yet (a draining agent's tunnel refuses new streams before it closes).
      if (outcome.status === 'disconnected' && this.#connections.get(cluster) === connection) {
        this.#connected.delete(cluster);
      }
      this.#onCopyOutcome(name, cluster, copy, outcome);
    });
  }

  #onCopyOutcome(name: string, cluster: string, copy: RenderedCopy, outcome: DeliveryOutcome): void {
    const live = this.#rollouts.get(name);
    if (live === undefined || live.record.progress.clusters[cluster]?.targetRevision !== copy.revision) return;
    if (outcome.status === 'delivered') live.unconfirmed.delete(cluster);
    else if (outcome.status === 'disconnected') {
      // The copy never reached the agent (its tunnel closed or began draining first): the cluster waits for its
      // copy again, offline-pending while away, and is handed the current one when it returns, never failed by
      // a deadline for a copy it did not get.
      const progress = live.record.progress.clusters[cluster];
      const { deliveredAt: _at, message: _message, ...rest } = progress;
      live.record.progress.clusters[cluster] = {
        ...rest,
        phase: this.#connected.has(cluster) ? 'waiting' : 'offline-pending',
      };
      live.unconfirmed.delete(cluster);
      this.#mark(name);
    } else {
      live.unconfirmed.delete(cluster);
      recordOne(live, { cluster, revision: copy.revision, readiness: 'failed', message: outcome.message });
      this.#logger.warn(`rollout ${name}: cluster ${cluster}: ${outcome.message}`);
      this.#mark(name);
    }
  }

  #enqueue(cluster: string, work: () => Promise<void>): void {
    this.#inFlight += 1;
    const tail = (this.#queues.get(cluster) ?? Promise.resolve())
      .then(work)
      .catch((error: Error) => this.#logger.warn(`rollout delivery to ${cluster} failed: ${error.message}`))
      .finally(() => {
        this.#inFlight -= 1;
        if (this.#queues.get(cluster) === tail) this.#queues.delete(cluster);
        if (this.#inFlight === 0 && !this.#isPassScheduled && !this.#isPassRunning) this.#notifyIdle();
      });
    this.#queues.set(cluster, tail);
  }

  #rememberRemoval(removal: PendingRemovalRecord): void {
    const byRollout = this.#pendingRemovals.get(removal.cluster) ?? new Map<string, PendingRemovalRecord>();
    byRollout.set(removal.rollout, removal);
    this.#pendingRemovals.set(removal.cluster, byRollout);
  }

  async #forgetRemoval(removal: PendingRemovalRecord): Promise<void> {
    const byRollout = this.#pendingRemovals.get(removal.cluster);
    if (byRollout?.get(removal.rollout) !== removal) return;
    byRollout.delete(removal.rollout);
    if (byRollout.size === 0) this.#pendingRemovals.delete(removal.cluster);
    await this.#store.deletePendingRemoval(removal.rollout, removal.cluster);
  }

  /** Records removals as owed (store first), forgets the clusters' reports, and sends to the connected ones. */
  async #owe(removals: readonly PendingRemovalRecord[]): Promise<void> {
    if (removals.length === 0) return;
    await this.#store.addPendingRemovals(removals);
    for (const removal of removals) {
      this.#rememberRemoval(removal);
      const live = this.#rollouts.get(removal.rollout);
      live?.reports.delete(removal.cluster);
      await this.#store.deleteReportedCopy(removal.rollout, removal.cluster);
      if (this.#connected.has(removal.cluster)) void this.#sendRemoval(removal);
    }
  }

  /** Sends one owed removal; true when the agent took it (and it is forgotten). */
  #sendRemoval(removal: PendingRemovalRecord): Promise<boolean> {
    return new Promise((resolve) => {
      this.#enqueue(removal.cluster, async () => {
        let isTaken = false;
        try {
          // Still owed? (A report or an earlier send may have settled it.)
          const owed = this.#pendingRemovals.get(removal.cluster)?.get(removal.rollout);
          if (owed === undefined) {
            isTaken = true;
            return;
          }
          // A held cluster is not changed by any rollout, a removal included: it stays owed until the release.
          if (this.#clusters.get(removal.cluster)?.hold !== undefined) return;
          const outcome = await this.#delivery.sendRemove(owed.cluster, { rollout: owed.rollout, owner: owed.owner });
          if (outcome.status === 'failed') {
            this.#logger.warn(`rollout ${removal.rollout}: removing it from ${removal.cluster}: ${outcome.message}`);
          }
          if (outcome.status !== 'delivered') return;
          isTaken = true;
          await this.#forgetRemoval(owed);
        } finally {
          resolve(isTaken);
        }
      });
    });
  }

  /** Sets the wake timer for the earliest soak end or delivery deadline. */
  #scheduleWake(): void {
    if (this.#wakeTimer !== undefined) this.#clock.clearTimeout(this.#wakeTimer);
    this.#wakeTimer = undefined;
    let due = Number.POSITIVE_INFINITY;
    for (const live of this.#rollouts.values()) {
      const { progress } = live.record;
      if (progress.state !== 'progressing') continue;
      const { soakMs, deadlineMs } = live.spec.strategy;
      if (progress.waveDoneSince !== undefined) due = Math.min(due, progress.waveDoneSince + soakMs);
      for (const cluster of Object.values(progress.clusters)) {
        if ((cluster.phase === 'applying' || cluster.phase === 'progressing') && cluster.deliveredAt !== undefined) {
          due = Math.min(due, cluster.deliveredAt + deadlineMs + 1);
        }
      }
    }
    if (!Number.isFinite(due) || this.#isStopped) return;
    this.#wakeTimer = this.#clock.setTimeout(
      () => {
        this.#wakeTimer = undefined;
        this.#markAll();
      },
      Math.max(0, due - this.#clock.now()),
    );
  }

  #notifyIdle(): void {
    for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }

  /**
   * Resolves once no pass is scheduled or running and no delivery is in
   * flight: what tests wait for instead of time.
   */
  settled(): Promise<void> {
    const isIdle = (): boolean =>
      !this.#isPassScheduled &&
      !this.#isPassRunning &&
      this.#inFlight === 0 &&
      this.#dirty.size === 0 &&
      !this.#isAllDirty &&
      this.#justConnected.size === 0;
    if (isIdle()) return Promise.resolve();
    return new Promise<void>((resolve) => this.#idleWaiters.push(resolve)).then(() => this.settled());
  }

  /** Stops timers and passes, and writes what is still unwritten. */
  async stop(): Promise<void> {
    this.#isStopped = true;
    if (this.#passTimer !== undefined) this.#clock.clearTimeout(this.#passTimer);
    if (this.#wakeTimer !== undefined) this.#clock.clearTimeout(this.#wakeTimer);
    this.#isPassScheduled = false;
    try {
      await this.#exclusive(() => this.#save([...this.#rollouts.values()]));
    } finally {
      // Whatever was not written stays unacknowledged: the agents send it again to the next leader.
      for (const name of [...this.#unwritten.keys()]) {
        for (const waiter of this.#takeUnwritten(name)) waiter.reject(new Error('the rollout controller has stopped'));
      }
    }
    for (const waiters of this.#statusWaiters.values()) for (const wake of [...waiters]) wake();
    this.#notifyIdle();
  }
}

/**
 * Records one cluster's report with the core's rule (recordReport), on that
 * cluster's entry alone: recordReport copies the whole cluster map, which at
 * 10,000 clusters and a report from each would be 10^8 copies.
 */
function recordOne(live: LiveRollout, report: CopyReport): void {
  const entry = live.record.progress.clusters[report.cluster];
  if (entry === undefined) return;
  const one = recordReport({ ...live.record.progress, clusters: { [report.cluster]: entry } }, report);
  live.record.progress.clusters[report.cluster] = one.clusters[report.cluster] as ClusterProgress;
}

function scopeOf(clustersSelector: string): LabelSelector {
  return parseLabelSelector(clustersSelector);
}
