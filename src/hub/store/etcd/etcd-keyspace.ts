/**
 * The hub's keys in etcd, under the key prefix: reading and listing
 * records (JSON values), the operations of a transaction, transactions
 * within etcd's size, and compare-and-swap over records' mod revisions,
 * retried when another replica changed them first.
 */
import { EdgeadmError } from '../../../errors.js';
import type { EtcdConnection, EtcdEntry } from './etcd-client.js';
import { parseStoredRecord } from './errors.js';
import { ETCD_CAS_MAX_ATTEMPTS, ETCD_MAX_TXN_OPS } from './limits.js';

/** The key families under the prefix. */
export const ETCD_KEYS = {
  clusters: 'clusters/',
  tokens: 'tokens/',
  users: 'users/',
  userTokens: 'user-tokens/',
  revoked: 'revoked/',
  rollouts: 'rollouts/',
  rolloutProgress: 'rollout-progress/',
  rolloutRevisions: 'rollout-revisions/',
  rolloutReports: 'rollout-reports/',
  pendingRemovals: 'pending-removals/',
} as const;

/** A stored change of a key, as the watch reports it (key relative to the prefix). */
export interface EtcdKeyEvent {
  type: 'put' | 'delete';
  key: string;
  /** The value put (raw: decoded only by the listener that needs it); absent on a delete. */
  value?: Buffer;
}

/** Revision numbers are zero-padded in keys so that key order is number order. */
export function revisionKey(revision: number): string {
  return String(revision).padStart(12, '0');
}

/** An operation of a transaction (an etcd3 builder, run by the transaction). */
export type TxnOp = Parameters<ReturnType<EtcdConnection['client']['if']>['then']>[number];

/** The hub's records under the prefix of one etcd connection. */
export class EtcdKeyspace {
  readonly #etcd: EtcdConnection;
  #isClosed = false;

  constructor(etcd: EtcdConnection) {
    this.#etcd = etcd;
  }

  /** The store was closed: every read and write is refused from now on. */
  close(): void {
    this.#isClosed = true;
  }

  get isClosed(): boolean {
    return this.#isClosed;
  }

  /** The raw entries under a relative prefix. */
  async entries(relative: string): Promise<EtcdEntry[]> {
    this.checkOpen();
    return this.#etcd.list(this.key(relative));
  }

  /** The full key of a relative one. */
  key(relative: string): string {
    return `${this.#etcd.prefix}${relative}`;
  }

  /** Refuses (E_HUB_STORE) once the store is closed. */
  checkOpen(): void {
    if (this.#isClosed) throw new EdgeadmError('the hub store is closed', { code: 'E_HUB_STORE' });
  }

  /** The record at a relative key and its entry, if present. */
  async get<T>(relative: string): Promise<{ record: T; entry: EtcdEntry } | undefined> {
    this.checkOpen();
    const entry = await this.#etcd.get(this.key(relative));
    return entry === undefined ? undefined : { record: parseStoredRecord<T & object>(entry), entry };
  }

  /** The records under a relative prefix. */
  async list<T>(relative: string): Promise<T[]> {
    this.checkOpen();
    return (await this.#etcd.list(this.key(relative))).map((entry) => parseStoredRecord<T & object>(entry));
  }

  /** The operation writing a record. */
  put(relative: string, value: unknown): TxnOp {
    return this.#etcd.client.put(this.key(relative)).value(JSON.stringify(value));
  }

  /** The operation deleting a key. */
  delete(relative: string): TxnOp {
    return this.#etcd.client.delete().key(this.key(relative));
  }

  /** The operation deleting every key under a prefix. */
  deletePrefix(relative: string): TxnOp {
    return this.#etcd.client.delete().prefix(this.key(relative));
  }

  /** Runs operations in transactions of at most {@link ETCD_MAX_TXN_OPS} (etcd refuses larger ones). */
  async commitInChunks(ops: readonly TxnOp[]): Promise<void> {
    this.checkOpen();
    for (let i = 0; i < ops.length; i += ETCD_MAX_TXN_OPS) {
      const chunk = ops.slice(i, i + ETCD_MAX_TXN_OPS);
      await this.#etcd.write(() =>
        this.#etcd.client
          .if(this.key(''), 'Version', '>', -1)
          .then(...chunk)
          .commit(),
      );
    }
  }

  /**
   * Compare-and-swap over the records at `relatives`: `decide` sees them
   * (undefined when absent) and returns its result and the operations to
   * commit; they are committed only if none of the records changed since
   * they were read, else everything is read again.
   */
  async compareAndSwap<R>(
    relatives: readonly string[],
    decide: (entries: (EtcdEntry | undefined)[]) => { result: R; ops: TxnOp[] },
  ): Promise<R> {
    this.checkOpen();
    for (let attempt = 0; attempt < ETCD_CAS_MAX_ATTEMPTS; attempt += 1) {
      const entries = await Promise.all(relatives.map((relative) => this.#etcd.get(this.key(relative))));
      const { result, ops } = decide(entries);
      if (ops.length === 0) return result;
      // Absent: still absent (create revision 0); present: not modified since it was read.
      const compares = relatives.map((relative, index): [string, 'Create' | 'Mod', string | number] => {
        const entry = entries[index];
        return entry === undefined ? [this.key(relative), 'Create', 0] : [this.key(relative), 'Mod', entry.modRevision];
      });
      const [first, ...rest] = compares;
      if (first === undefined) throw new Error('compare-and-swap over no key');
      const txn = this.#etcd.client.if(first[0], first[1], '==', first[2]);
      for (const [key, target, value] of rest) txn.and(key, target, '==', value);
      const response = await this.#etcd.write(() => txn.then(...ops).commit());
      if (response.succeeded) return result;
    }
    throw new EdgeadmError(`the hub store kept changing under ${relatives.join(', ')}; try again`, {
      code: 'E_HUB_STORE_CONFLICT',
    });
  }
}
