/**
 * The rollout controller's state and its persistence: every rollout's live
 * record in memory (loaded from the store at start, written through to it),
 * what each cluster last reported, and the report lines recorded but not yet
 * written, which are acknowledged to their agents only once they are.
 */
import { parseLabelSelector, type LabelSelector } from '../../kube/label-selector.js';
import type { Logger } from '../../log/run-log.js';
import type { RolloutStatusView } from '../../rollout/api.js';
import { recordReport, type ClusterProgress, type CopyReport } from '../../rollout/progress.js';
import type { RolloutSpec } from '../../rollout/spec.js';
import type { ReportMessage, RolloutOwner } from '../../rollout/wire.js';
import type { HubStore, ReportedCopyRecord, RolloutOwnerRecord, RolloutRecord, RolloutWrite } from '../store/store.js';
import { loadStoredRollout, RolloutQuarantine } from './stored-rollout.js';

/** A report line about a copy (not a removal). */
export type CopyReportMessage = Extract<ReportMessage, { kind: 'copy' }>;

/** One rollout as the controller holds it. */
export interface LiveRollout {
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
   * The full status view at `record.statusVersion`, made when first asked
   * for: what every status request and watcher of that version is answered
   * from, so that many watchers cost one computation per change, not one each.
   */
  view?: RolloutStatusView;
}

/** The rollouts, their unwritten reports, and the stored ones that could not be loaded. */
export class LiveRollouts {
  readonly #store: HubStore;
  readonly #logger: Logger;
  readonly #byName = new Map<string, LiveRollout>();
  /** Stored rollouts that could not be loaded at start (stored-rollout.ts): kept out of every pass. */
  readonly quarantine = new RolloutQuarantine();
  readonly #dirtyReports = new Map<string, ReportedCopyRecord>();
  /** By rollout, reports recorded since its record was last written: settled by the next write of it. */
  readonly #unwritten = new Map<string, PromiseWithResolvers<void>[]>();
  /**
   * Per rollout (the object: a new revision is a new one), its clusters'
   * progress entries as last written. Entries are replaced, never changed
   * in place (stepRollout's contract, recordOne), so an entry that is not
   * the one written has changed. A rollout without one is written whole.
   */
  readonly #written = new WeakMap<LiveRollout, Map<string, ClusterProgress>>();

  constructor(store: HubStore, logger: Logger) {
    this.#store = store;
    this.#logger = logger;
  }

  /**
   * Loads every stored rollout and its reports; a rollout that cannot be
   * loaded is quarantined, never fatal. `viewKeyOf` gives each its first
   * view key.
   */
  async load(viewKeyOf: (live: LiveRollout) => string): Promise<void> {
    const store = this.#store;
    for (const record of await store.listRollouts()) {
      const loaded = await loadStoredRollout(store, record);
      if (!loaded.ok) {
        // Quarantined, never fatal: one document must not keep the hub from serving everyone else.
        this.quarantine.add(record, loaded.quarantine);
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
      live.viewKey = viewKeyOf(live);
      this.#byName.set(record.name, live);
    }
  }

  get(name: string): LiveRollout | undefined {
    return this.#byName.get(name);
  }

  has(name: string): boolean {
    return this.#byName.has(name);
  }

  set(live: LiveRollout): void {
    this.#byName.set(live.record.name, live);
  }

  /** Forgets a deleted rollout; its unwritten reports are moot, so their agents need not send them again. */
  delete(name: string): void {
    this.#byName.delete(name);
    this.quarantine.delete(name);
    for (const waiter of this.takeUnwritten(name)) waiter.resolve();
  }

  names(): string[] {
    return [...this.#byName.keys()];
  }

  all(): LiveRollout[] {
    return [...this.#byName.values()];
  }

  /**
   * Records a copy's report line of `cluster` with the core's rule. Returns the
   * rollout it changed and a promise settled by the next write of it, or
   * undefined for a rollout this controller does not hold.
   */
  record(cluster: string, message: CopyReportMessage): { rollout: string; written: Promise<void> } | undefined {
    const live = this.#byName.get(message.rollout);
    if (live === undefined) return undefined;
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
    return { rollout: message.rollout, written: written.promise };
  }

  /**
   * Writes rollout records and the reports gathered since the last write:
   * of each record's progress only the clusters whose entry changed since
   * it was last written (all of them the first time, or after a failed
   * write: the written entries are remembered only once the store took them).
   */
  async save(records: readonly LiveRollout[]): Promise<void> {
    const reports = [...this.#dirtyReports.values()].filter((report) => this.#byName.has(report.rollout));
    this.#dirtyReports.clear();
    // The reports recorded so far are in what is written now; later ones wait for the next write.
    const waiters = records.flatMap((live) => this.takeUnwritten(live.record.name));
    const writes = records.map((live) => this.#writeOf(live));
    try {
      await this.#store.putRollouts(writes.map(({ write }) => write));
      await this.#store.putReportedCopies(reports);
    } catch (error) {
      for (const waiter of waiters) waiter.reject(error);
      throw error;
    }
    for (const { live, entries } of writes) this.#remember(live, entries);
    for (const waiter of waiters) waiter.resolve();
  }

  /** One rollout's write, and the entries it writes as they are now (absent: removed). */
  #writeOf(live: LiveRollout): {
    live: LiveRollout;
    write: RolloutWrite;
    entries: [string, ClusterProgress | undefined][];
  } {
    const clusters = live.record.progress.clusters;
    const written = this.#written.get(live);
    if (written === undefined) return { live, write: { record: live.record }, entries: Object.entries(clusters) };
    const entries: [string, ClusterProgress | undefined][] = [];
    let count = 0;
    let added = 0;
    for (const name in clusters) {
      const progress = clusters[name] as ClusterProgress;
      count += 1;
      const before = written.get(name);
      if (before === progress) continue;
      if (before === undefined) added += 1;
      entries.push([name, progress]);
    }
    // Some written cluster is gone only when the counts do not add up: only then are they looked for.
    if (written.size + added !== count) {
      for (const name of written.keys()) if (clusters[name] === undefined) entries.push([name, undefined]);
    }
    return { live, write: { record: live.record, changedClusters: entries.map(([name]) => name) }, entries };
  }

  #remember(live: LiveRollout, entries: readonly [string, ClusterProgress | undefined][]): void {
    const written = this.#written.get(live) ?? new Map<string, ClusterProgress>();
    for (const [name, progress] of entries) {
      if (progress === undefined) written.delete(name);
      else written.set(name, progress);
    }
    this.#written.set(live, written);
  }

  /** Takes the waiters of `rollout`'s reports not yet written. */
  takeUnwritten(rollout: string): PromiseWithResolvers<void>[] {
    const waiters = this.#unwritten.get(rollout) ?? [];
    this.#unwritten.delete(rollout);
    return waiters;
  }

  /** Refuses every report not yet written: the agents send them again to the next leader. */
  rejectUnwritten(error: Error): void {
    for (const name of [...this.#unwritten.keys()]) for (const waiter of this.takeUnwritten(name)) waiter.reject(error);
  }
}

/**
 * Records one cluster's report with the core's rule (recordReport), on that
 * cluster's entry alone: recordReport copies the whole cluster map, which at
 * 10,000 clusters and a report from each would be 10^8 copies.
 */
export function recordOne(live: LiveRollout, report: CopyReport): void {
  const entry = live.record.progress.clusters[report.cluster];
  if (entry === undefined) return;
  const one = recordReport({ ...live.record.progress, clusters: { [report.cluster]: entry } }, report);
  live.record.progress.clusters[report.cluster] = one.clusters[report.cluster] as ClusterProgress;
}

/** JSON with sorted keys: equal documents give equal text whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The identity a rollout's copies are written as: its owner. */
export function ownerOf(record: RolloutOwnerRecord): RolloutOwner {
  return { user: record.user, groups: [...record.groups] };
}

/** The clusters a rollout may reach: its owner's clusters selector. */
export function scopeOf(clustersSelector: string): LabelSelector {
  return parseLabelSelector(clustersSelector);
}
