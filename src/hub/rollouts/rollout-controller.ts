/**
 * The hub's rollout controller: it owns every rollout's live state (in
 * memory, written through to the store) and moves it with the pure core
 * (src/rollout/progress.ts) whenever something happens. A short composition
 * of parts with one job each (README.md):
 *
 * - {@link LiveRollouts}: the state and its persistence; report lines are
 *   acknowledged only once written;
 * - {@link KnownClusters}: the clusters' records and connections;
 * - {@link PassScheduler}: events only mark; one pass then steps each marked
 *   rollout once, at most every {@link ROLLOUT_PASS_INTERVAL_MS}, and a wake
 *   timer marks everything at the next soak end or delivery deadline;
 * - {@link RolloutPass}: the pass itself;
 * - {@link DeliveryQueues}, {@link CopyDelivery}, {@link OwedRemovals}: copies
 *   and removals, one at a time per cluster, only while still the cluster's
 *   target; removals stored before they are sent, across hub restarts;
 * - {@link RolloutRevisions}, {@link RolloutOperations}: the operator's
 *   operations and the revisions they write;
 * - status-views.ts and {@link StatusWaiters}: what is shown, and the long
 *   polls waiting for it to change.
 *
 * The clock and the timers are injected, so tests decide time.
 */
import type { Logger } from '../../log/run-log.js';
import type {
  ApplyResult,
  DeleteResult,
  QuarantinedRollout,
  RolloutListItem,
  RolloutStatusView,
} from '../../rollout/api.js';
import type { ObservedCluster } from '../../rollout/progress.js';
import type { RolloutSpec } from '../../rollout/spec.js';
import type { ReportMessage } from '../../rollout/wire.js';
import { ROLLOUT_PASS_INTERVAL_MS, ROLLOUT_PASS_MAX_SHARE } from '../limits.js';
import type { HubStore, PendingRemovalRecord } from '../store/store.js';
import { CopyDelivery } from './copy-delivery.js';
import { DeliveryQueues } from './delivery-queues.js';
import { KnownClusters } from './known-clusters.js';
import { LiveRollouts, type LiveRollout } from './live-rollouts.js';
import { OwedRemovals } from './owed-removals.js';
import { PassScheduler } from './pass-scheduler.js';
import { systemRolloutClock, type RolloutClock } from './rollout-clock.js';
import type { RolloutDelivery } from './rollout-delivery.js';
import { RolloutOperations } from './rollout-operations.js';
import { RolloutPass } from './rollout-pass.js';
import type { RolloutActor } from './rollout-permissions.js';
import { RolloutRevisions } from './rollout-revisions.js';
import { StatusWaiters } from './status-waiters.js';
import { listItemOf, statusViewOf, viewKeyOf } from './status-views.js';

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

/** The hub's rollout controller. */
export class RolloutController {
  readonly #store: HubStore;
  readonly #logger: Logger;
  readonly #rollouts: LiveRollouts;
  readonly #clusters: KnownClusters;
  readonly #removals: OwedRemovals;
  readonly #scheduler: PassScheduler;
  readonly #waiters: StatusWaiters;
  readonly #operations: RolloutOperations;
  #isStopped = false;

  private constructor(options: RolloutControllerOptions) {
    const { store, delivery, logger } = options;
    const clock = options.clock ?? systemRolloutClock;
    this.#store = store;
    this.#logger = logger;
    this.#rollouts = new LiveRollouts(store, logger);
    const rollouts = this.#rollouts;
    const clusters = (this.#clusters = new KnownClusters(options.connected));
    const queues = new DeliveryQueues(logger, () => this.#scheduler.drained());
    const removals = (this.#removals = new OwedRemovals({ store, delivery, queues, clusters, logger }));
    const waiters = (this.#waiters = new StatusWaiters(clock));
    const pass = (): Promise<void> => passes.run();
    const isDrained = (): boolean => queues.inFlight === 0;
    const intervalMs = options.passIntervalMs ?? ROLLOUT_PASS_INTERVAL_MS;
    const maxShare = ROLLOUT_PASS_MAX_SHARE;
    const scheduler = (this.#scheduler = new PassScheduler({ clock, intervalMs, maxShare, logger, pass, isDrained }));
    const wake = (name: string): void => waiters.wake(name);
    const mark = (name: string): void => scheduler.mark(name);
    const viewKey = (live: LiveRollout): string => viewKeyOf(live, clusters);
    const owe = (owed: readonly PendingRemovalRecord[]): Promise<void> => this.#owe(owed);
    const copies = new CopyDelivery({ rollouts, clusters, removals, queues, delivery, clock, logger, mark });
    const revisions = new RolloutRevisions({
      store,
      rollouts,
      clusters,
      clock,
      logger,
      viewKeyOf: viewKey,
      owe,
      wake,
      mark,
    });
    const passes = new RolloutPass({
      store,
      rollouts,
      clusters,
      removals,
      copies,
      revisions,
      scheduler,
      clock,
      viewKeyOf: viewKey,
      wake,
      owe,
    });
    const exclusive = <T>(work: () => Promise<T>): Promise<T> => scheduler.exclusive(work);
    const statusView = (live: LiveRollout): RolloutStatusView => statusViewOf(live, false, clusters);
    this.#operations = new RolloutOperations({
      store,
      rollouts,
      clusters,
      removals,
      revisions,
      logger,
      exclusive,
      statusView,
      wake,
      mark,
    });
  }

  /** Loads every rollout, report and owed removal from the store and runs a first pass. */
  static async start(options: RolloutControllerOptions): Promise<RolloutController> {
    const controller = new RolloutController(options);
    await controller.#clusters.reload(controller.#store);
    await controller.#rollouts.load((live) => viewKeyOf(live, controller.#clusters));
    await controller.#removals.load();
    // Clusters connected before the controller started get what they are owed.
    for (const cluster of controller.#clusters.connected()) controller.#scheduler.connected(cluster);
    controller.#scheduler.markAll();
    return controller;
  }

  // ---------------------------------------------------------------- events

  /** A cluster's tunnel was accepted: it gets its current copies and owed removals within the next pass. */
  clusterConnected(cluster: string): void {
    this.#clusters.connect(cluster);
    this.#scheduler.connected(cluster);
  }

  /** A cluster's tunnel is gone. */
  clusterDisconnected(cluster: string): void {
    this.#clusters.disconnect(cluster);
    this.#scheduler.disconnected(cluster);
  }

  /** Clusters were registered or deleted, or a hold or properties changed: read them again. */
  clustersChanged(): void {
    this.#scheduler.clustersChanged();
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
      const owed = this.#removals.get(cluster, message.rollout);
      if (owed === undefined) return Promise.resolve();
      return this.#removals.forget(owed).catch((error: Error) => {
        this.#logger.warn(`rollout ${message.rollout}: forgetting the removal from ${cluster}: ${error.message}`);
        throw error;
      });
    }
    const recorded = this.#rollouts.record(cluster, message);
    if (recorded === undefined) return Promise.resolve();
    this.#scheduler.mark(recorded.rollout);
    return recorded.written;
  }

  // ------------------------------------------------------------ operations

  /** Why a placement reaches outside a scope, or undefined. */
  outsideScope(spec: RolloutSpec, clustersSelector: string): string | undefined {
    return this.#operations.outsideScope(spec, clustersSelector);
  }

  /** The clusters as the core sees them now. */
  observedClusters(): ObservedCluster[] {
    return this.#clusters.observed();
  }

  /** Stored rollouts quarantined at start that the actor may see: all for an admin, their own for a user. */
  quarantined(actor: RolloutActor): QuarantinedRollout[] {
    return this.#rollouts.quarantine.visible(actor);
  }

  /** How many stored rollouts are quarantined (the hub's metric). */
  get quarantinedCount(): number {
    return this.#rollouts.quarantine.size;
  }

  /** The stored document of a rollout the actor may see. */
  document(name: string, actor: RolloutActor): Promise<{ revision: number; document: unknown }> {
    return this.#operations.document(name, actor);
  }

  /** What {@link RolloutController.apply} would answer, changing nothing (a dry run). */
  preview(document: unknown, spec: RolloutSpec, actor: RolloutActor): ApplyResult {
    return this.#operations.preview(document, spec, actor);
  }

  /** Creates or updates a rollout (rollout-operations.ts). */
  apply(document: unknown, spec: RolloutSpec, actor: RolloutActor): Promise<ApplyResult> {
    return this.#operations.apply(document, spec, actor);
  }

  /** Pause, resume or abort. */
  command(name: string, command: 'pause' | 'resume' | 'abort', actor: RolloutActor): Promise<RolloutStatusView> {
    return this.#operations.command(name, command, actor);
  }

  /** Applies the revision before the current one again, as a new revision. */
  undo(name: string, actor: RolloutActor): Promise<RolloutStatusView> {
    return this.#operations.undo(name, actor);
  }

  /** Deletes a rollout; its clusters are owed a removal (rollout-operations.ts). */
  delete(name: string, actor: RolloutActor): Promise<DeleteResult> {
    return this.#operations.delete(name, actor);
  }

  // ----------------------------------------------------------------- views

  /** The rollouts an actor may see. */
  list(actor: RolloutActor): RolloutListItem[] {
    return this.#rollouts
      .all()
      .filter((live) => this.#operations.isVisible(live, actor))
      .sort((a, b) => (a.record.name < b.record.name ? -1 : 1))
      .map(listItemOf);
  }

  /** The status of a rollout the actor may see. */
  status(name: string, actor: RolloutActor, withClusters: boolean): RolloutStatusView {
    this.#rollouts.quarantine.refuse(name, actor);
    const live = this.#operations.visible(name, actor);
    // Made once per version, for every request and watcher of it.
    if (live.view?.statusVersion !== live.record.statusVersion) live.view = statusViewOf(live, true, this.#clusters);
    const view = live.view;
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
    await this.#waiters.wait(name, timeoutMs, signal);
  }

  // ------------------------------------------------------------- lifecycle

  /**
   * Resolves once no pass is scheduled or running and no delivery is in
   * flight: what tests wait for instead of time.
   */
  settled(): Promise<void> {
    return this.#scheduler.settled();
  }

  /** Stops timers and passes, and writes what is still unwritten. */
  async stop(): Promise<void> {
    this.#isStopped = true;
    this.#scheduler.stop();
    try {
      await this.#scheduler.exclusive(() => this.#rollouts.save(this.#rollouts.all()));
    } finally {
      // Whatever was not written stays unacknowledged: the agents send it again to the next leader.
      this.#rollouts.rejectUnwritten(new Error('the rollout controller has stopped'));
    }
    this.#waiters.wakeAll();
    this.#scheduler.notifyIdle();
  }

  /** Records removals as owed (store first), forgets the clusters' reports, and sends to the connected ones. */
  #owe(removals: readonly PendingRemovalRecord[]): Promise<void> {
    return this.#removals.owe(removals, async (removal) => {
      this.#rollouts.get(removal.rollout)?.reports.delete(removal.cluster);
      await this.#store.deleteReportedCopy(removal.rollout, removal.cluster);
    });
  }
}
