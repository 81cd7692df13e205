/**
 * The connection of a hub replica to etcd: TLS with a client certificate,
 * a deadline on every call, reads of whole prefixes in pages at one
 * revision, and the store's health as this replica sees it (a failed call
 * or a failed probe makes it `unavailable` with a cause naming etcd; the
 * next successful probe makes it `ok` again).
 */
import { readFileSync } from 'node:fs';
import type { Etcd3, IKeyValue } from 'etcd3';
import { ValidationError } from '../../../errors.js';
import type { StoreHealth } from '../coordination.js';
import { StoreUnavailableError } from './errors.js';
import {
  DEFAULT_ETCD_KEY_PREFIX,
  ETCD_CALL_DEADLINE_MS,
  ETCD_DIAL_TIMEOUT_MS,
  ETCD_HEALTH_PROBE_MS,
  ETCD_LIST_PAGE_SIZE,
} from './limits.js';

/** Where etcd is and how to reach it (`hub serve --etcd-…`). */
export interface EtcdConnectionOptions {
  /** `https://host:2379` (or `http://` on a trusted loopback), at least one. */
  endpoints: readonly string[];
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  /** Every key of the hub lives under it; {@link DEFAULT_ETCD_KEY_PREFIX} by default. */
  keyPrefix?: string;
}

/**
 * Parses `--etcd-endpoints` (comma-separated URLs).
 *
 * @throws {ValidationError} `E_HUB_ETCD_ENDPOINTS` for anything but http(s)://host:port URLs.
 */
export function parseEtcdEndpoints(text: string): string[] {
  const endpoints = text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  const invalid = (why: string): ValidationError =>
    new ValidationError(`invalid --etcd-endpoints ${JSON.stringify(text)}: ${why}`, {
      code: 'E_HUB_ETCD_ENDPOINTS',
      hints: ['For example --etcd-endpoints https://10.0.0.1:2379,https://10.0.0.2:2379,https://10.0.0.3:2379'],
    });
  if (endpoints.length === 0) throw invalid('no endpoint');
  for (const endpoint of endpoints) {
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch {
      throw invalid(`${endpoint} is not a URL`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid(`${endpoint} is not http(s)://`);
    if (url.port === '' || (url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.username !== '') {
      throw invalid(`${endpoint} is not scheme://host:port`);
    }
  }
  return endpoints;
}

/** A key and value read from etcd. */
export interface EtcdEntry {
  key: string;
  value: string;
  modRevision: string;
  createRevision: string;
}

function entryOf(kv: IKeyValue): EtcdEntry {
  return {
    key: kv.key.toString('utf8'),
    value: kv.value.toString('utf8'),
    modRevision: String(kv.mod_revision),
    createRevision: String(kv.create_revision),
  };
}

/** The first key after every key that starts with `prefix` (etcd's range end of a prefix). */
export function prefixEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix, 'utf8');
  for (let i = end.length - 1; i >= 0; i -= 1) {
    if (end[i]! < 0xff) {
      end[i]! += 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

/** What an etcd failure tells the user: which etcd, and what it said. */
function causeOf(error: unknown, endpoints: readonly string[]): string {
  const message = error instanceof Error ? error.message : String(error);
  return `etcd (${endpoints.join(',')}) did not answer: ${message.split('\n')[0]}`;
}

/** A replica's connection to etcd. */
export class EtcdConnection {
  readonly client: Etcd3;
  readonly prefix: string;
  readonly endpoints: readonly string[];
  #health: StoreHealth = { state: 'ok' };
  readonly #healthListeners = new Set<(health: StoreHealth) => void>();
  #probe: NodeJS.Timeout | undefined;
  #isClosed = false;

  private constructor(client: Etcd3, options: EtcdConnectionOptions) {
    this.client = client;
    this.endpoints = options.endpoints;
    this.prefix = options.keyPrefix ?? DEFAULT_ETCD_KEY_PREFIX;
  }

  /**
   * Connects (lazily: no call is made until the first read).
   *
   * @throws {ValidationError} `E_HUB_ETCD_TLS` when a TLS file cannot be read.
   */
  static async open(options: EtcdConnectionOptions): Promise<EtcdConnection> {
    // Loaded on use: a hub on SQLite never loads gRPC.
    const { Etcd3 } = await import('etcd3');
    const read = (file: string | undefined, flag: string): Buffer | undefined => {
      if (file === undefined) return undefined;
      try {
        return readFileSync(file);
      } catch (error) {
        throw new ValidationError(`cannot read ${flag} ${file}: ${(error as NodeJS.ErrnoException).code ?? ''}`, {
          code: 'E_HUB_ETCD_TLS',
          cause: error,
          hints: ['Give the CA, client certificate and key files the etcd cluster trusts (PEM).'],
        });
      }
    };
    const ca = read(options.caFile, '--etcd-cacert');
    const cert = read(options.certFile, '--etcd-cert');
    const key = read(options.keyFile, '--etcd-key');
    const isTls = options.endpoints.some((endpoint) => endpoint.startsWith('https://'));
    const client = new Etcd3({
      hosts: [...options.endpoints],
      dialTimeout: ETCD_DIAL_TIMEOUT_MS,
      // Every unary call has a deadline; streams (watches, lease keepalives) live until closed.
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + ETCD_CALL_DEADLINE_MS }),
      ...(isTls
        ? {
            credentials: {
              rootCertificate: ca ?? Buffer.alloc(0),
              ...(key === undefined ? {} : { privateKey: key }),
              ...(cert === undefined ? {} : { certChain: cert }),
            },
          }
        : {}),
    });
    return new EtcdConnection(client, options);
  }

  /** The store's health as this replica last saw it. */
  health(): StoreHealth {
    return this.#health;
  }

  /** Calls `listener` at every change of health. */
  onHealth(listener: (health: StoreHealth) => void): () => void {
    this.#healthListeners.add(listener);
    return () => this.#healthListeners.delete(listener);
  }

  #setHealth(next: StoreHealth): void {
    if (next.state === this.#health.state) return;
    this.#health = next;
    for (const listener of this.#healthListeners) listener(next);
  }

  /** Marks the store unavailable (the cause of the first failure is kept). */
  markUnavailable(error: unknown): StoreUnavailableError {
    const cause = causeOf(error, this.endpoints);
    if (this.#health.state === 'ok') this.#setHealth({ state: 'unavailable', cause, since: new Date().toISOString() });
    // Writes are refused while unavailable: something must notice etcd's return, whoever uses the connection.
    if (!this.#isClosed) this.startProbe();
    return new StoreUnavailableError(cause, error);
  }

  /** Probes etcd with a linearizable read every {@link ETCD_HEALTH_PROBE_MS} (it needs quorum). */
  startProbe(): void {
    if (this.#probe !== undefined) return;
    let isProbing = false;
    this.#probe = setInterval(() => {
      if (isProbing) return;
      isProbing = true;
      void this.probeOnce().finally(() => (isProbing = false));
    }, ETCD_HEALTH_PROBE_MS);
    this.#probe.unref();
  }

  /** One probe: a linearizable read of one key. */
  async probeOnce(): Promise<StoreHealth> {
    try {
      await this.client.get(`${this.prefix}health-probe`).string();
      this.#setHealth({ state: 'ok' });
    } catch (error) {
      this.markUnavailable(error);
    }
    return this.#health;
  }

  /** Runs a read; a failure is the store unavailable. */
  async read<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw this.markUnavailable(error);
    }
  }

  /** Runs a write, refused at once while the store is unavailable (the probe notices its return). */
  async write<T>(work: () => Promise<T>): Promise<T> {
    const health = this.#health;
    if (health.state === 'unavailable') throw new StoreUnavailableError(health.cause);
    return this.read(work);
  }

  /** One key, with its revisions; undefined when absent. */
  async get(key: string): Promise<EtcdEntry | undefined> {
    return this.read(async () => {
      const response = await this.client.kv.range({ key: Buffer.from(key, 'utf8') });
      const kv = response.kvs[0];
      return kv === undefined ? undefined : entryOf(kv);
    });
  }

  /** Whether no key starts with `prefix`. */
  async isEmpty(prefix: string): Promise<boolean> {
    return this.read(async () => {
      const response = await this.client.kv.range({
        key: Buffer.from(prefix, 'utf8'),
        range_end: prefixEnd(prefix),
        limit: 1,
        keys_only: true,
      });
      return response.kvs.length === 0;
    });
  }

  /** Every key under `prefix`, in key order, read in pages of {@link ETCD_LIST_PAGE_SIZE} at one revision. */
  async list(prefix: string): Promise<EtcdEntry[]> {
    return this.read(async () => {
      const entries: EtcdEntry[] = [];
      const end = prefixEnd(prefix);
      let start = Buffer.from(prefix, 'utf8');
      let revision: string | undefined;
      for (;;) {
        const response = await this.client.kv.range({
          key: start,
          range_end: end,
          limit: ETCD_LIST_PAGE_SIZE,
          ...(revision === undefined ? {} : { revision }),
        });
        revision ??= String(response.header.revision);
        for (const kv of response.kvs) entries.push(entryOf(kv));
        const last = response.kvs[response.kvs.length - 1];
        if (!response.more || last === undefined) return entries;
        start = Buffer.concat([last.key, Buffer.from([0])]);
      }
    });
  }

  #users = 0;

  /** One more user of the connection (the store, the coordination): it stays open until each has released it. */
  retain(): void {
    this.#users += 1;
  }

  /** Releases one use; the last closes the connection. */
  release(): void {
    this.#users -= 1;
    if (this.#users <= 0) this.close();
  }

  /** Stops probing and closes the client. */
  close(): void {
    this.#isClosed = true;
    clearInterval(this.#probe);
    this.#probe = undefined;
    this.client.close();
  }
}
