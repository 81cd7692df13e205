/**
 * The rollout tables of the SQLite store: rollouts (a head row and a row
 * per cluster's progress, rollout-progress-rows.ts), their stored
 * revisions, what each cluster last reported, and the removals owed to
 * clusters. Every write is one statement or one transaction.
 */
import type { StatementSync } from 'node:sqlite';
import type { ClusterProgress } from '../../rollout/progress.js';
import { headOf, joinRollout, rowChangesOf } from './rollout-progress-rows.js';
import type {
  PendingRemovalRecord,
  ReportedCopyRecord,
  RolloutRecord,
  RolloutRevisionRecord,
  RolloutWrite,
} from './store.js';

type Row = Record<string, unknown>;

/** What the rollout tables use of the open database. */
export interface SqliteAccess {
  /** A statement, prepared once. */
  prepare(sql: string): StatementSync;
  /** Runs `work` in one immediate transaction: committed if it returns, rolled back if it throws. */
  transaction<T>(work: () => T): T;
}

/** The rollout half of the SQLite store's tables (sqlite-store.ts). */
export class SqliteRolloutTables {
  readonly #db: SqliteAccess;

  constructor(db: SqliteAccess) {
    this.#db = db;
  }

  #prepare(sql: string): StatementSync {
    return this.#db.prepare(sql);
  }

  #transaction<T>(work: () => T): T {
    return this.#db.transaction(work);
  }

  /** Writes a rollout's head and the cluster rows the write changes. */
  #writeRollout(write: RolloutWrite): void {
    const { record } = write;
    this.#prepare('INSERT OR REPLACE INTO rollouts (name, record_json) VALUES (?, ?)').run(
      record.name,
      JSON.stringify(headOf(record)),
    );
    const changes = rowChangesOf(write);
    if (changes.isWhole) this.#prepare('DELETE FROM rollout_progress WHERE rollout = ?').run(record.name);
    const upsert = this.#prepare(
      'INSERT OR REPLACE INTO rollout_progress (rollout, cluster, record_json) VALUES (?, ?, ?)',
    );
    for (const [cluster, progress] of changes.put) upsert.run(record.name, cluster, JSON.stringify(progress));
    const remove = this.#prepare('DELETE FROM rollout_progress WHERE rollout = ? AND cluster = ?');
    for (const cluster of changes.removed) remove.run(record.name, cluster);
  }

  /** The cluster rows of one rollout, or of all (keyed by rollout). */
  #progressRows(rollout?: string): Map<string, [string, ClusterProgress][]> {
    const rows = (
      rollout === undefined
        ? this.#prepare('SELECT rollout, cluster, record_json FROM rollout_progress ORDER BY rollout, cluster').all()
        : this.#prepare(
            'SELECT rollout, cluster, record_json FROM rollout_progress WHERE rollout = ? ORDER BY cluster',
          ).all(rollout)
    ) as Row[];
    const byRollout = new Map<string, [string, ClusterProgress][]>();
    for (const row of rows) {
      const name = String(row.rollout);
      const list = byRollout.get(name) ?? [];
      list.push([String(row.cluster), JSON.parse(String(row.record_json)) as ClusterProgress]);
      byRollout.set(name, list);
    }
    return byRollout;
  }

  async putRollout(record: RolloutRecord, revision?: RolloutRevisionRecord, keepRevisions?: number): Promise<void> {
    this.#transaction(() => {
      this.#writeRollout({ record });
      if (revision === undefined) return;
      this.#prepare('INSERT OR REPLACE INTO rollout_revisions (name, revision, record_json) VALUES (?, ?, ?)').run(
        revision.name,
        revision.revision,
        JSON.stringify(revision),
      );
      if (keepRevisions !== undefined) {
        this.#prepare(
          `DELETE FROM rollout_revisions WHERE name = ? AND revision NOT IN
             (SELECT revision FROM rollout_revisions WHERE name = ? ORDER BY revision DESC LIMIT ?)`,
        ).run(revision.name, revision.name, Math.max(1, keepRevisions));
      }
    });
  }

  async putRollouts(writes: readonly RolloutWrite[]): Promise<void> {
    if (writes.length === 0) return;
    this.#transaction(() => {
      for (const write of writes) this.#writeRollout(write);
    });
  }

  async getRollout(name: string): Promise<RolloutRecord | undefined> {
    const row = this.#prepare('SELECT record_json FROM rollouts WHERE name = ?').get(name) as Row | undefined;
    if (row === undefined) return undefined;
    const head = JSON.parse(String(row.record_json)) as RolloutRecord;
    return joinRollout(head, this.#progressRows(name).get(name) ?? []);
  }

  async listRollouts(): Promise<RolloutRecord[]> {
    const rows = this.#progressRows();
    return (this.#prepare('SELECT record_json FROM rollouts ORDER BY name').all() as Row[]).map((row) => {
      const head = JSON.parse(String(row.record_json)) as RolloutRecord;
      return joinRollout(head, rows.get(head.name) ?? []);
    });
  }

  async getRolloutRevision(name: string, revision: number): Promise<RolloutRevisionRecord | undefined> {
    const row = this.#prepare('SELECT record_json FROM rollout_revisions WHERE name = ? AND revision = ?').get(
      name,
      revision,
    ) as Row | undefined;
    return row === undefined ? undefined : (JSON.parse(String(row.record_json)) as RolloutRevisionRecord);
  }

  async listRolloutRevisions(name: string): Promise<number[]> {
    return (
      this.#prepare('SELECT revision FROM rollout_revisions WHERE name = ? ORDER BY revision').all(name) as Row[]
    ).map((row) => Number(row.revision));
  }

  async deleteRollout(name: string, pendingRemovals: readonly PendingRemovalRecord[]): Promise<boolean> {
    return this.#transaction(() => {
      const result = this.#prepare('DELETE FROM rollouts WHERE name = ?').run(name);
      this.#prepare('DELETE FROM rollout_progress WHERE rollout = ?').run(name);
      this.#prepare('DELETE FROM rollout_revisions WHERE name = ?').run(name);
      this.#prepare('DELETE FROM rollout_reports WHERE rollout = ?').run(name);
      this.#insertPendingRemovals(pendingRemovals);
      return Number(result.changes) === 1;
    });
  }

  async putReportedCopies(reports: readonly ReportedCopyRecord[]): Promise<void> {
    if (reports.length === 0) return;
    const insert = this.#prepare(
      'INSERT OR REPLACE INTO rollout_reports (rollout, cluster, record_json) VALUES (?, ?, ?)',
    );
    this.#transaction(() => {
      for (const report of reports) insert.run(report.rollout, report.cluster, JSON.stringify(report));
    });
  }

  async listReportedCopies(rollout: string): Promise<ReportedCopyRecord[]> {
    return (
      this.#prepare('SELECT record_json FROM rollout_reports WHERE rollout = ? ORDER BY cluster').all(rollout) as Row[]
    ).map((row) => JSON.parse(String(row.record_json)) as ReportedCopyRecord);
  }

  async deleteReportedCopy(rollout: string, cluster: string): Promise<void> {
    this.#prepare('DELETE FROM rollout_reports WHERE rollout = ? AND cluster = ?').run(rollout, cluster);
  }

  #insertPendingRemovals(removals: readonly PendingRemovalRecord[]): void {
    const insert = this.#prepare(
      'INSERT OR REPLACE INTO rollout_pending_removals (rollout, cluster, record_json) VALUES (?, ?, ?)',
    );
    for (const removal of removals) insert.run(removal.rollout, removal.cluster, JSON.stringify(removal));
  }

  async addPendingRemovals(removals: readonly PendingRemovalRecord[]): Promise<void> {
    if (removals.length === 0) return;
    this.#transaction(() => this.#insertPendingRemovals(removals));
  }

  async listPendingRemovals(): Promise<PendingRemovalRecord[]> {
    return (
      this.#prepare('SELECT record_json FROM rollout_pending_removals ORDER BY cluster, rollout').all() as Row[]
    ).map((row) => JSON.parse(String(row.record_json)) as PendingRemovalRecord);
  }

  async deletePendingRemoval(rollout: string, cluster: string): Promise<void> {
    this.#prepare('DELETE FROM rollout_pending_removals WHERE rollout = ? AND cluster = ?').run(rollout, cluster);
  }
}
