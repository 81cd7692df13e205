/**
 * A rollout's revisions: writing a new one (apply, undo, rollback), which
 * owes a removal to every cluster the old revision reached and the new one
 * no longer places, and reading the revision before the current one again
 * (undo, and `onFailure: rollback` when a wave's gate fails).
 */
import type { Logger } from '../../log/run-log.js';
import { placedClusters } from '../../rollout/placement.js';
import { newProgress, type RollbackRecord } from '../../rollout/progress.js';
import { parseRollout, type RolloutSpec } from '../../rollout/spec.js';
import { checkDocumentLimits } from '../http/document-limits.js';
import { MAX_STORED_ROLLOUT_REVISIONS } from '../limits.js';
import type { HubStore, PendingRemovalRecord, RolloutOwnerRecord, RolloutRecord } from '../store/store.js';
import type { KnownClusters } from './known-clusters.js';
import { canonicalJson, scopeOf, type LiveRollout, type LiveRollouts } from './live-rollouts.js';
import type { RolloutClock } from './rollout-clock.js';
import { removalIdentity, type RolloutActor } from './rollout-permissions.js';

/** Options of {@link RolloutRevisions}. */
export interface RolloutRevisionsOptions {
  store: HubStore;
  rollouts: LiveRollouts;
  clusters: KnownClusters;
  clock: RolloutClock;
  logger: Logger;
  /** The view key of a rollout (status-views.ts), kept on it. */
  viewKeyOf: (live: LiveRollout) => string;
  /** Records removals as owed and sends them (owed-removals.ts, with the reports dropped). */
  owe: (removals: readonly PendingRemovalRecord[]) => Promise<void>;
  /** Wakes the watchers of a rollout's status. */
  wake: (name: string) => void;
  /** Marks a rollout for the next pass. */
  mark: (name: string) => void;
}

/** The revision before the current one, read again; or why it cannot be. */
export type PreviousRevision =
  | { ok: true; revision: number; document: unknown; spec: RolloutSpec }
  | { ok: false; revision?: number; reason: 'none' | 'unreadable'; message: string };

/** Writes new revisions and reads earlier ones. */
export class RolloutRevisions {
  readonly #options: RolloutRevisionsOptions;

  constructor(options: RolloutRevisionsOptions) {
    this.#options = options;
  }

  /** Writes `document` as the next revision of `existing` (or the first), owned by `actor`. */
  async write(
    existing: LiveRollout | undefined,
    spec: RolloutSpec,
    document: unknown,
    documentText: string,
    actor: RolloutActor,
  ): Promise<LiveRollout> {
    const { store, rollouts, clusters, clock, logger } = this.#options;
    const now = new Date(clock.now()).toISOString();
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
    const placed = new Set(placedClusters(spec.placement, clusters.observed(), scopeOf(owner.clustersSelector)));
    const dropped = Object.entries(existing?.record.progress.clusters ?? {})
      .filter(([name, cluster]) => cluster.targetRevision !== undefined && !placed.has(name))
      .map(([name]) => name);
    await store.putRollout(
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
    live.viewKey = this.#options.viewKeyOf(live);
    rollouts.set(live);
    // The applier's revision left these clusters: the removal is theirs, and runs as them.
    await this.#options.owe(dropped.map((cluster) => ({ rollout: spec.name, cluster, owner: removalIdentity(actor) })));
    logger.info(`rollout ${spec.name}: revision ${revision} applied by ${actor.user}`);
    this.#options.wake(spec.name);
    this.#options.mark(spec.name);
    return live;
  }

  /** The stored revision before `live`'s current one, parsed (leniently) and within the document limits. */
  async previous(live: LiveRollout): Promise<PreviousRevision> {
    const { store } = this.#options;
    const name = live.record.name;
    const revisions = await store.listRolloutRevisions(name);
    const previous = revisions.filter((revision) => revision < live.record.revision).at(-1);
    const stored = previous === undefined ? undefined : await store.getRolloutRevision(name, previous);
    if (previous === undefined || stored === undefined) {
      return { ok: false, reason: 'none', message: 'there is no earlier revision' };
    }
    try {
      // An earlier revision stored before the hub's document limits is held to them before anything walks it.
      checkDocumentLimits(stored.document, `revision ${previous}'s document`);
      const spec = parseRollout(stored.document, { isStrict: false });
      return { ok: true, revision: previous, document: stored.document, spec };
    } catch (error) {
      return { ok: false, revision: previous, reason: 'unreadable', message: (error as Error).message };
    }
  }

  /**
   * `onFailure: rollback`: applies the document of the revision before the
   * halted one again, as a new revision owned (and so written on the
   * clusters) by the rollout's owner, whose policy it is. Without an earlier
   * revision, or with one that cannot be read, the rollout stays halted and
   * says why.
   */
  async rollBack(live: LiveRollout, rollback: RollbackRecord): Promise<void> {
    const { store, logger } = this.#options;
    const name = live.record.name;
    const previous = await this.previous(live);
    if (!previous.ok) {
      live.record.progress.haltReason = `${rollback.reason}; not rolled back: ${previous.message}`;
      delete live.view;
      logger.warn(
        `rollout ${name}: revision ${rollback.revision} halted and cannot be rolled back: ${previous.message}`,
      );
      this.#options.mark(name);
      return;
    }
    const { owner } = live.record;
    const actor: RolloutActor = { ...owner, groups: [...owner.groups], isAdmin: false };
    const next = await this.write(live, previous.spec, previous.document, canonicalJson(previous.document), actor);
    next.record.progress.rollbackOf = rollback;
    next.viewKey = this.#options.viewKeyOf(next);
    await store.putRollouts([{ record: next.record }]);
    logger.warn(
      `rollout ${name}: revision ${rollback.revision} halted (${rollback.reason}); rolled back to revision ` +
        `${previous.revision}'s document as revision ${next.record.revision}`,
    );
  }
}
