/**
 * What operators do to rollouts through the hub API: read a document,
 * preview and apply a revision, pause, resume, abort, undo and delete, each
 * checked against the rollout identity model (rollout-permissions.ts) and
 * the quarantine of stored rollouts that could not be loaded. Writes run
 * one at a time with the controller's passes (`exclusive`).
 */
import type { Logger } from '../../log/run-log.js';
import type { ApplyResult, DeleteResult, RolloutStatusView } from '../../rollout/api.js';
import { placementOutsideScope } from '../../rollout/placement.js';
import { resumeHalted, type RolloutProgress } from '../../rollout/progress.js';
import type { RolloutSpec } from '../../rollout/spec.js';
import { HttpError } from '../http/http-replies.js';
import type { HubStore, PendingRemovalRecord } from '../store/store.js';
import type { KnownClusters } from './known-clusters.js';
import { canonicalJson, type LiveRollout, type LiveRollouts } from './live-rollouts.js';
import type { OwedRemovals } from './owed-removals.js';
import { refuseRolloutChange, removalIdentity, type RolloutActor } from './rollout-permissions.js';
import type { RolloutRevisions } from './rollout-revisions.js';

/** Options of {@link RolloutOperations}. */
export interface RolloutOperationsOptions {
  store: HubStore;
  rollouts: LiveRollouts;
  clusters: KnownClusters;
  removals: OwedRemovals;
  revisions: RolloutRevisions;
  logger: Logger;
  /** Runs a write after every pass and operation before it. */
  exclusive: <T>(work: () => Promise<T>) => Promise<T>;
  /** A rollout's status view as of now (status-views.ts). */
  statusView: (live: LiveRollout) => RolloutStatusView;
  /** Wakes the watchers of a rollout's status. */
  wake: (name: string) => void;
  /** Marks a rollout for the next pass. */
  mark: (name: string) => void;
}

/** The operator's operations on rollouts. */
export class RolloutOperations {
  readonly #options: RolloutOperationsOptions;

  constructor(options: RolloutOperationsOptions) {
    this.#options = options;
  }

  /** Why a placement reaches outside a scope, or undefined. */
  outsideScope(spec: RolloutSpec, clustersSelector: string): string | undefined {
    return placementOutsideScope(spec.placement, clustersSelector, this.#options.clusters.records());
  }

  /** The rollouts an actor may see: all for an admin, for a scoped user those whose placement stays in their clusters. */
  isVisible(live: LiveRollout, actor: RolloutActor): boolean {
    if (actor.isAdmin) return true;
    return this.outsideScope(live.spec, actor.clustersSelector) === undefined;
  }

  /** A rollout the actor may see, or 404. */
  visible(name: string, actor: RolloutActor): LiveRollout {
    const live = this.#options.rollouts.get(name);
    if (live === undefined || !this.isVisible(live, actor)) {
      throw new HttpError(404, 'E_ROLLOUT_NOT_FOUND', `no rollout named "${name}"`);
    }
    return live;
  }

  /** The stored document of a rollout the actor may see. */
  async document(name: string, actor: RolloutActor): Promise<{ revision: number; document: unknown }> {
    this.#options.rollouts.quarantine.refuse(name, actor);
    const live = this.visible(name, actor);
    const stored = await this.#options.store.getRolloutRevision(name, live.record.revision);
    return { revision: live.record.revision, document: stored?.document };
  }

  /** What {@link apply} would answer, changing nothing (a dry run). */
  preview(document: unknown, spec: RolloutSpec, actor: RolloutActor): ApplyResult {
    const existing = this.#existingToChange(spec.name, actor);
    const isUnchanged = existing !== undefined && existing.documentText === canonicalJson(document);
    const current = existing?.record.revision ?? 0;
    return { name: spec.name, revision: isUnchanged ? current : current + 1, isUnchanged, isCreated: !existing };
  }

  /**
   * Creates or updates a rollout (a new revision, unless the document is
   * unchanged). The caller has parsed the document and checked the actor's
   * scope against its placement.
   */
  apply(document: unknown, spec: RolloutSpec, actor: RolloutActor): Promise<ApplyResult> {
    return this.#options.exclusive(async () => {
      const existing = this.#existingToChange(spec.name, actor);
      const documentText = canonicalJson(document);
      if (existing !== undefined && existing.documentText === documentText) {
        return { name: spec.name, revision: existing.record.revision, isUnchanged: true, isCreated: false };
      }
      const live = await this.#options.revisions.write(existing, spec, document, documentText, actor);
      return { name: spec.name, revision: live.record.revision, isUnchanged: false, isCreated: existing === undefined };
    });
  }

  /** Pause, resume or abort. */
  command(name: string, command: 'pause' | 'resume' | 'abort', actor: RolloutActor): Promise<RolloutStatusView> {
    return this.#options.exclusive(async () => {
      const live = this.#toChange(name, actor, command);
      const progress = live.record.progress;
      const state = progress.state;
      const next = nextState(name, command, state);
      if (next !== state) {
        // A halted rollout resumed tries its failed clusters again: the operator has fixed what failed.
        live.record.progress = state === 'halted' ? resumeHalted(progress) : { ...progress, state: next };
        delete live.view;
        await this.#options.rollouts.save([live]);
        this.#options.logger.info(`rollout ${name}: ${command} by ${actor.user}`);
        this.#options.mark(name);
      }
      return this.#options.statusView(live);
    });
  }

  /** Applies the revision before the current one again, as a new revision. */
  undo(name: string, actor: RolloutActor): Promise<RolloutStatusView> {
    return this.#options.exclusive(async () => {
      const live = this.#toChange(name, actor, 'undo');
      const previous = await this.#options.revisions.previous(live);
      if (!previous.ok && previous.reason === 'none') {
        throw new HttpError(409, 'E_ROLLOUT_NO_PREVIOUS', `rollout "${name}" has no earlier revision to go back to`);
      }
      if (!previous.ok) {
        const message = `cannot undo to revision ${previous.revision}: ${previous.message}`;
        throw new HttpError(409, 'E_ROLLOUT_NO_PREVIOUS', message);
      }
      const reason = actor.isAdmin ? undefined : this.outsideScope(previous.spec, actor.clustersSelector);
      if (reason !== undefined) {
        throw new HttpError(403, 'E_HUB_FORBIDDEN', `cannot undo to revision ${previous.revision}: ${reason}`);
      }
      const { spec, document } = previous;
      const next = await this.#options.revisions.write(live, spec, document, canonicalJson(document), actor);
      return this.#options.statusView(next);
    });
  }

  /**
   * Deletes a rollout: every cluster that may hold its copy is owed a
   * removal (stored with the deletion), sent now to the connected ones; the
   * others get it when they return.
   */
  async delete(name: string, actor: RolloutActor): Promise<DeleteResult> {
    const owed = await this.#options.exclusive(() => this.#deleteRecord(name, actor));
    // Sent outside the lock: a slow agent must not hold up every other rollout.
    const { clusters, removals } = this.#options;
    const taken = await Promise.all(
      owed.map(async (removal) => clusters.isConnected(removal.cluster) && (await removals.send(removal))),
    );
    return {
      name,
      removed: owed.filter((_, index) => taken[index]).map((removal) => removal.cluster),
      pendingRemovals: owed.filter((_, index) => !taken[index]).map((removal) => removal.cluster),
    };
  }

  async #deleteRecord(name: string, actor: RolloutActor): Promise<PendingRemovalRecord[]> {
    const { rollouts, clusters, removals, store } = this.#options;
    const quarantined = rollouts.quarantine.record(name);
    const record = quarantined ?? this.visible(name, actor).record;
    const live = rollouts.get(name);
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
    for (const cluster of live?.reports.keys() ?? []) if (clusters.has(cluster)) reached.add(cluster);
    const owed = [...reached].sort().map((cluster) => ({ rollout: name, cluster, owner: identity }));
    await store.deleteRollout(name, owed);
    rollouts.delete(name);
    for (const removal of owed) removals.remember(removal);
    this.#options.wake(name);
    this.#options.logger.info(`rollout ${name}: deleted by ${actor.user}; ${owed.length} clusters to clean`);
    return owed;
  }

  /** The rollout named `name` if it exists, once the actor may change it (new revisions take it over). */
  #existingToChange(name: string, actor: RolloutActor): LiveRollout | undefined {
    this.#options.rollouts.quarantine.refuse(name, actor);
    const existing = this.#options.rollouts.get(name);
    if (existing === undefined) return undefined;
    if (!this.isVisible(existing, actor)) {
      throw new HttpError(
        403,
        'E_HUB_FORBIDDEN',
        `a rollout named "${name}" exists and reaches clusters outside yours; choose another name`,
      );
    }
    this.#refuseUnlessMayChange(existing, actor, 'apply a new revision of');
    return existing;
  }

  /** A rollout the actor may see and change, or the refusal. */
  #toChange(name: string, actor: RolloutActor, action: string): LiveRollout {
    this.#options.rollouts.quarantine.refuse(name, actor);
    const live = this.visible(name, actor);
    this.#refuseUnlessMayChange(live, actor, action);
    return live;
  }

  /** Refuses a change of a rollout the actor may see but does not own (rollout-permissions.ts). */
  #refuseUnlessMayChange(live: LiveRollout, actor: RolloutActor, action: string): void {
    const reason = refuseRolloutChange(actor, { name: live.record.name, owner: live.record.owner.user }, action);
    if (reason !== undefined) throw new HttpError(403, 'E_ROLLOUT_NOT_OWNER', reason);
  }
}

/** The state a pause, resume or abort moves a rollout to, or the refusal (409). Pure. */
export function nextState(
  name: string,
  command: 'pause' | 'resume' | 'abort',
  state: RolloutProgress['state'],
): RolloutProgress['state'] {
  if (command === 'abort') return 'aborted';
  if (command === 'pause') {
    // A complete rollout may be paused too: its next revision, and clusters that register or are
    // released later, then wait until it is resumed (a freeze before a change window).
    if (state === 'progressing' || state === 'complete') return 'paused';
    if (state !== 'paused') throw cannot(name, command, state);
    return state;
  }
  if (state === 'paused' || state === 'halted') return 'progressing';
  if (state !== 'progressing') throw cannot(name, command, state);
  return state;
}

function cannot(name: string, command: string, state: string): HttpError {
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
