/**
 * The rollout records of the etcd store: rollouts (a head key and a key
 * per cluster's progress, rollout-progress-rows.ts), their stored revisions
 * (documents sealed: a Rollout may carry Secret objects), what each cluster
 * last reported (objects sealed), and the removals owed to clusters.
 */
import type { ClusterProgress } from '../../../rollout/progress.js';
import { headOf, joinRollout, rowChangesOf } from '../rollout-progress-rows.js';
import type {
  PendingRemovalRecord,
  ReportedCopyRecord,
  RolloutRecord,
  RolloutRevisionRecord,
  RolloutWrite,
} from '../store.js';
import type { EncryptionKeys } from './encryption.js';
import { parseStoredRecord } from './errors.js';
import { ETCD_KEYS, revisionKey, type EtcdKeyspace, type TxnOp } from './etcd-keyspace.js';
import { ETCD_MAX_TXN_OPS } from './limits.js';

/** A rollout revision as stored: the document sealed. */
type SealedRevisionRecord = Omit<RolloutRevisionRecord, 'document'> & { sealedDocument: string };
/** A reported copy as stored: the objects sealed. */
type SealedReportRecord = Omit<ReportedCopyRecord, 'objects'> & { sealedObjects: string };

/** The rollout half of the etcd store's records (etcd-store.ts). */
export class EtcdRolloutRecords {
  readonly #space: EtcdKeyspace;
  readonly #keys: EncryptionKeys;

  constructor(space: EtcdKeyspace, keys: EncryptionKeys) {
    this.#space = space;
    this.#keys = keys;
  }

  /**
   * A revision as etcd holds it: the document sealed, as token secrets are
   * (a Rollout may carry Secret objects; issue #30), the rest in clear.
   */
  #sealRevision(relative: string, revision: RolloutRevisionRecord): SealedRevisionRecord {
    const { document, ...rest } = revision;
    return { ...rest, sealedDocument: this.#keys.seal(JSON.stringify(document), this.#space.key(relative)) };
  }

  /** A stored revision read back; one written before documents were sealed is read as it is. */
  #openRevision(stored: SealedRevisionRecord | RolloutRevisionRecord, etcdKey: string): RolloutRevisionRecord {
    if (!('sealedDocument' in stored)) return stored;
    const { sealedDocument, ...rest } = stored;
    return { ...rest, document: JSON.parse(this.#keys.open(sealedDocument, etcdKey)) as unknown };
  }

  /** A report as etcd holds it: the objects and their status sealed. */
  #sealReport(relative: string, report: ReportedCopyRecord): SealedReportRecord {
    const { objects, ...rest } = report;
    return { ...rest, sealedObjects: this.#keys.seal(JSON.stringify(objects), this.#space.key(relative)) };
  }

  #openReport(stored: SealedReportRecord | ReportedCopyRecord, etcdKey: string): ReportedCopyRecord {
    if (!('sealedObjects' in stored)) return stored;
    const { sealedObjects, ...rest } = stored;
    return { ...rest, objects: JSON.parse(this.#keys.open(sealedObjects, etcdKey)) as ReportedCopyRecord['objects'] };
  }

  /**
   * The operations on one rollout's cluster keys for a write. A whole
   * write of a record with clusters reads which keys are stored, to delete
   * those it no longer has (etcd refuses a transaction that puts a key
   * inside a range it deletes); one without clusters deletes the range.
   */
  async #rowOps(write: RolloutWrite): Promise<TxnOp[]> {
    const { record } = write;
    const prefix = `${ETCD_KEYS.rolloutProgress}${record.name}/`;
    const changes = rowChangesOf(write);
    if (changes.isWhole && changes.put.length === 0) return [this.#space.deletePrefix(prefix)];
    const removed = [...changes.removed];
    if (changes.isWhole) {
      const full = this.#space.key(prefix);
      for (const entry of await this.#space.entries(prefix)) {
        const cluster = entry.key.slice(full.length);
        if (record.progress.clusters[cluster] === undefined) removed.push(cluster);
      }
    }
    return [
      ...changes.put.map(([cluster, progress]) => this.#space.put(`${prefix}${cluster}`, progress)),
      ...removed.map((cluster) => this.#space.delete(`${prefix}${cluster}`)),
    ];
  }

  #headOp(record: RolloutRecord): TxnOp {
    return this.#space.put(`${ETCD_KEYS.rollouts}${record.name}`, headOf(record));
  }

  /** The records of heads, with their cluster keys. */
  async #joined(heads: readonly RolloutRecord[]): Promise<RolloutRecord[]> {
    return Promise.all(
      heads.map(async (head) => {
        const prefix = `${ETCD_KEYS.rolloutProgress}${head.name}/`;
        const full = this.#space.key(prefix);
        const rows = (await this.#space.entries(prefix)).map(
          (entry) => [entry.key.slice(full.length), parseStoredRecord<ClusterProgress>(entry)] as const,
        );
        return joinRollout(head, rows);
      }),
    );
  }

  async putRollout(record: RolloutRecord, revision?: RolloutRevisionRecord, keepRevisions?: number): Promise<void> {
    this.#space.checkOpen();
    // The cluster keys first, then the head and its revision's document together.
    const rows = await this.#rowOps({ record });
    const ops = [this.#headOp(record)];
    if (revision !== undefined) {
      const revisionsPrefix = `${ETCD_KEYS.rolloutRevisions}${revision.name}/`;
      const relative = `${revisionsPrefix}${revisionKey(revision.revision)}`;
      ops.push(this.#space.put(relative, this.#sealRevision(relative, revision)));
      if (keepRevisions !== undefined) {
        const stored = await this.listRolloutRevisions(revision.name);
        const all = [...new Set([...stored, revision.revision])].sort((a, b) => b - a);
        for (const old of all.slice(Math.max(1, keepRevisions))) {
          ops.push(this.#space.delete(`${revisionsPrefix}${revisionKey(old)}`));
        }
      }
    }
    await this.#space.commitInChunks(rows);
    await this.#space.commitInChunks(ops);
  }

  async putRollouts(writes: readonly RolloutWrite[]): Promise<void> {
    this.#space.checkOpen();
    const rows: TxnOp[] = [];
    for (const write of writes) rows.push(...(await this.#rowOps(write)));
    // The heads after every cluster key, so that no head is ahead of its rows.
    await this.#space.commitInChunks(rows);
    await this.#space.commitInChunks(writes.map((write) => this.#headOp(write.record)));
  }

  async getRollout(name: string): Promise<RolloutRecord | undefined> {
    const head = (await this.#space.get<RolloutRecord>(`${ETCD_KEYS.rollouts}${name}`))?.record;
    return head === undefined ? undefined : (await this.#joined([head]))[0];
  }

  async listRollouts(): Promise<RolloutRecord[]> {
    return this.#joined(await this.#space.list<RolloutRecord>(ETCD_KEYS.rollouts));
  }

  async getRolloutRevision(name: string, revision: number): Promise<RolloutRevisionRecord | undefined> {
    const found = await this.#space.get<SealedRevisionRecord | RolloutRevisionRecord>(
      `${ETCD_KEYS.rolloutRevisions}${name}/${revisionKey(revision)}`,
    );
    return found === undefined ? undefined : this.#openRevision(found.record, found.entry.key);
  }

  async listRolloutRevisions(name: string): Promise<number[]> {
    this.#space.checkOpen();
    const prefix = this.#space.key(`${ETCD_KEYS.rolloutRevisions}${name}/`);
    return (await this.#space.entries(`${ETCD_KEYS.rolloutRevisions}${name}/`)).map((entry) =>
      Number(entry.key.slice(prefix.length)),
    );
  }

  /**
   * The rollout's record, documents and reports go in the first
   * transaction with as many removals as fit; removals past etcd's
   * transaction size follow in further transactions (a removal owed for a
   * rollout that still exists would remove a live rollout's copies, so the
   * rollout goes first).
   */
  async deleteRollout(name: string, pendingRemovals: readonly PendingRemovalRecord[]): Promise<boolean> {
    const relative = `${ETCD_KEYS.rollouts}${name}`;
    const removals = pendingRemovals.map((removal) =>
      this.#space.put(`${ETCD_KEYS.pendingRemovals}${removal.rollout}/${removal.cluster}`, removal),
    );
    const head = ETCD_MAX_TXN_OPS - 4;
    const existed = await this.#space.compareAndSwap([relative], ([entry]) => ({
      result: entry !== undefined,
      ops: [
        ...(entry === undefined ? [] : [this.#space.delete(relative)]),
        this.#space.deletePrefix(`${ETCD_KEYS.rolloutProgress}${name}/`),
        this.#space.deletePrefix(`${ETCD_KEYS.rolloutRevisions}${name}/`),
        this.#space.deletePrefix(`${ETCD_KEYS.rolloutReports}${name}/`),
        ...removals.slice(0, head),
      ],
    }));
    await this.#space.commitInChunks(removals.slice(head));
    return existed;
  }

  async putReportedCopies(reports: readonly ReportedCopyRecord[]): Promise<void> {
    await this.#space.commitInChunks(
      reports.map((report) => {
        const relative = `${ETCD_KEYS.rolloutReports}${report.rollout}/${report.cluster}`;
        return this.#space.put(relative, this.#sealReport(relative, report));
      }),
    );
  }

  async listReportedCopies(rollout: string): Promise<ReportedCopyRecord[]> {
    this.#space.checkOpen();
    const entries = await this.#space.entries(`${ETCD_KEYS.rolloutReports}${rollout}/`);
    return entries.map((entry) =>
      this.#openReport(parseStoredRecord<SealedReportRecord | ReportedCopyRecord>(entry), entry.key),
    );
  }

  async deleteReportedCopy(rollout: string, cluster: string): Promise<void> {
    await this.#space.commitInChunks([this.#space.delete(`${ETCD_KEYS.rolloutReports}${rollout}/${cluster}`)]);
  }

  async addPendingRemovals(removals: readonly PendingRemovalRecord[]): Promise<void> {
    await this.#space.commitInChunks(
      removals.map((removal) =>
        this.#space.put(`${ETCD_KEYS.pendingRemovals}${removal.rollout}/${removal.cluster}`, removal),
      ),
    );
  }

  async listPendingRemovals(): Promise<PendingRemovalRecord[]> {
    const removals = await this.#space.list<PendingRemovalRecord>(ETCD_KEYS.pendingRemovals);
    // As SQLite orders them: by cluster, then rollout.
    return removals.sort((a, b) =>
      a.cluster === b.cluster ? (a.rollout < b.rollout ? -1 : 1) : a.cluster < b.cluster ? -1 : 1,
    );
  }

  async deletePendingRemoval(rollout: string, cluster: string): Promise<void> {
    await this.#space.commitInChunks([this.#space.delete(`${ETCD_KEYS.pendingRemovals}${rollout}/${cluster}`)]);
  }
}
