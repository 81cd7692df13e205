/**
 * The operator side of the hub API: what `hub token create`, `hub clusters`,
 * `hub user create` and `hub rollout` call (rollout/api.ts is the contract
 * of the rollout and hold routes). TLS is verified against the CA in the hub
 * config; the bearer token comes from it too. The library entry (src/api.ts)
 * hands the same client to scripts.
 */
import { watchEndOf } from './rollout-watch-end.js';
import type { HubTokenView, HubUserView, ReplicaView } from '../hub/contract/views.js';
import type { Agent as HttpsAgent } from 'node:https';
import { setTimeout as delay } from 'node:timers/promises';
import { EdgeadmError } from '../errors.js';
import type { HubConfig } from '../hub/contract/hub-config.js';
import { errorFromApi } from '../hub/contract/api-errors.js';
import type { ClusterView } from '../hub/contract/views.js';
import {
  ATTENTION_API_PATH,
  type AttentionPage,
  type AttentionReasonKind,
  type AttentionRow,
  type AttentionSortKey,
} from '../hub/contract/attention.js';
import {
  STATUS_LONG_POLL_MS,
  type ApplyResult,
  type ClusterHold,
  type DeleteResult,
  type QuarantinedRollout,
  type RolloutListItem,
  type RolloutStatusView,
} from '../rollout/api.js';
import type { RolloutState } from '../rollout/progress.js';
import type { RolloutDocument } from '../rollout/rollout-file.js';
import { parseBootstrapToken, parseBootstrapTokenId } from '../trust/bootstrap-token.js';
import {
  ATTENTION_PAGE_SIZE,
  HUB_CLIENT_TIMEOUT_MS,
  MAX_LARGE_RESPONSE_BYTES,
  MAX_RESPONSE_BYTES,
  ROLLOUT_APPLY_TIMEOUT_MS,
  WATCH_POLL_GRACE_MS,
  WATCH_RECONNECT_DELAY_MS,
  WATCH_RECONNECT_WINDOW_MS,
} from './limits.js';

export type { RolloutDocument };
export { HUB_CLIENT_TIMEOUT_MS, WATCH_RECONNECT_WINDOW_MS } from './limits.js';

/** A cluster as the hold and property routes answer: the cluster view with its hold and properties. */
export type HeldClusterView = ClusterView & { hold?: ClusterHold; properties?: Record<string, string> };

/** What `POST /hub/v1/tokens` returns. */
export interface CreatedHubToken {
  token: string;
  id: string;
  expiresAt?: string;
  usages?: number;
  /** The labels a cluster registered with it must have (`*`: any value), if limited. */
  labels?: Record<string, string>;
  hub: string;
  caCertHash: string;
}

/** What `POST /hub/v1/users` returns. */
export interface CreatedHubUser {
  name: string;
  token: string;
  clustersSelector: string;
  groups: string[];
  expiresAt?: string;
  server: string;
  caPem: string;
}

/** What {@link HubClient.listAttention} asks for; the hub's defaults for what is left out. */
export interface AttentionRequest {
  selector?: string | undefined;
  reason?: AttentionReasonKind | undefined;
  offlineForSeconds?: number | undefined;
  certsWithinDays?: number | undefined;
  sort?: AttentionSortKey | undefined;
}

/** The whole attention list, read page by page: every row, the counts and rollouts of its first page. */
export type AttentionList = Omit<AttentionPage, 'offset' | 'limit'>;

/** Options of one hub HTTPS call. */
export interface HubCallOptions {
  server: string;
  caPem: string;
  method: string;
  path: string;
  /** `Bearer <this>`. */
  token?: string;
  /** Client certificate (agent renewal). */
  certPem?: string;
  keyPem?: string;
  body?: unknown;
  /** Connect through this agent (the tunnel agent's HTTP proxy); a fresh direct connection otherwise. */
  agent?: HttpsAgent;
  /** How long the socket may stay idle; {@link HUB_CLIENT_TIMEOUT_MS} by default (a long poll needs more). */
  timeoutMs?: number;
  /** Abandons the call (its socket is closed) when aborted. */
  signal?: AbortSignal | undefined;
  /** Largest answer read; 16 MiB by default (a dry run's rendered copies may need more). */
  maxResponseBytes?: number;
}

/** One JSON call to the hub; typed errors for refusals. */
export async function callHub<T>(options: HubCallOptions): Promise<T> {
  const { request } = await import('node:https');
  const url = new URL(options.path, options.server);
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const maxResponseBytes = options.maxResponseBytes ?? MAX_RESPONSE_BYTES;
  return new Promise<T>((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method,
        ca: options.caPem,
        rejectUnauthorized: true,
        agent: options.agent ?? false,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        timeout: options.timeoutMs ?? HUB_CLIENT_TIMEOUT_MS,
        ...(options.certPem === undefined ? {} : { cert: options.certPem, key: options.keyPem }),
        headers: {
          Accept: 'application/json',
          ...(options.token === undefined ? {} : { Authorization: `Bearer ${options.token}` }),
          ...(payload === undefined
            ? {}
            : { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxResponseBytes) {
            res.destroy();
            reject(
              new EdgeadmError(`the hub's answer is larger than ${maxResponseBytes} bytes`, {
                code: 'E_HUB_ANSWER_TOO_LARGE',
              }),
            );
          } else chunks.push(chunk);
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status < 200 || status >= 300) {
            reject(withScopedUserHints(errorFromApi(status, text)));
            return;
          }
          try {
            resolve(JSON.parse(text) as T);
          } catch (error) {
            reject(new EdgeadmError(`the hub answer is not JSON: ${(error as Error).message}`, { code: 'E_HUB_API' }));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('the hub did not answer in time')));
    req.on('error', (error) =>
      reject(
        new EdgeadmError(`cannot reach the hub at ${options.server}: ${error.message}`, {
          code: 'E_HUB_UNREACHABLE',
          cause: error,
          hints: ['Check the server in the hub config and that "edgeadm hub serve" runs there.'],
        }),
      ),
    );
    req.end(payload);
  });
}

/**
 * An admin-only operation refused to a scoped user, with where that user
 * finds their clusters instead (the web view, kubectl through the hub).
 */
export function withScopedUserHints(error: EdgeadmError): EdgeadmError {
  if (error.code !== 'E_HUB_FORBIDDEN' || !/is not a hub admin/.test(error.message)) return error;
  return new EdgeadmError(error.message, {
    code: error.code,
    exitCode: error.exitCode,
    ...(error.details === undefined ? {} : { details: error.details }),
    hints: [
      ...error.hints,
      'This is for hub admins. A user made with "hub user create --clusters-selector" sees their clusters in the web view (https://HUB/ui/) and reaches each with "edgeadm kubectl --cluster NAME" or "edgeadm kubeconfig --cluster NAME".',
    ],
  });
}

/** Options of {@link HubClient.watchRollout}. */
export interface WatchRolloutOptions {
  /** Include the per-cluster rows in each view. */
  clusters?: boolean;
  /** Ends the watch (the iterator returns) when aborted. */
  signal?: AbortSignal;
  /** Waits between reconnect attempts (injected by tests). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The clock the reconnect window is measured with (injected by tests). */
  now?: () => number;
}

/** The states after which a rollout changes no more by itself: a watch ends there. */
export const FINAL_ROLLOUT_STATES: ReadonlySet<RolloutState> = new Set(['complete', 'halted', 'aborted']);

function rolloutPath(name: string, suffix = ''): string {
  return `/hub/v1/rollouts/${encodeURIComponent(name)}${suffix}`;
}

function clusterPath(name: string, suffix = ''): string {
  return `/hub/v1/clusters/${encodeURIComponent(name)}${suffix}`;
}

function isUnreachable(error: unknown): boolean {
  return error instanceof EdgeadmError && error.code === 'E_HUB_UNREACHABLE';
}

/**
 * The id of a hub token named by its id or by the whole token (as it
 * leaked), checked before anything is read or called.
 *
 * @throws {ValidationError} when it is neither.
 */
export function hubTokenId(idOrToken: string): string {
  return idOrToken.includes('.') ? parseBootstrapToken(idOrToken).id : parseBootstrapTokenId(idOrToken);
}

/** The operator API, bound to one hub config. */
export class HubClient {
  constructor(readonly config: HubConfig) {}

  #call<T>(
    method: string,
    path: string,
    body?: unknown,
    extra: Pick<HubCallOptions, 'timeoutMs' | 'maxResponseBytes' | 'signal'> = {},
  ): Promise<T> {
    return callHub<T>({
      server: this.config.server,
      caPem: this.config.caPem,
      token: this.config.token,
      method,
      path,
      body,
      ...extra,
    });
  }

  createToken(options: { ttlMs: number; usages?: number; labels?: Record<string, string> }): Promise<CreatedHubToken> {
    return this.#call('POST', '/hub/v1/tokens', options);
  }

  /** Every hub token, without its secret. */
  async listTokens(): Promise<HubTokenView[]> {
    return (await this.#call<{ tokens: HubTokenView[] }>('GET', '/hub/v1/tokens')).tokens;
  }

  /** Deletes a token by its id ({@link hubTokenId}): it registers no more clusters. */
  deleteToken(id: string): Promise<{ id: string; isDeleted: boolean }> {
    return this.#call('DELETE', `/hub/v1/tokens/${parseBootstrapTokenId(id)}`);
  }

  /** Every hub user, without their token. */
  async listUsers(): Promise<HubUserView[]> {
    return (await this.#call<{ users: HubUserView[] }>('GET', '/hub/v1/users')).users;
  }

  /** Deletes a user: their token stops working. */
  deleteUser(name: string): Promise<{ name: string; isDeleted: boolean }> {
    return this.#call('DELETE', `/hub/v1/users/${encodeURIComponent(name)}`);
  }

  async listClusters(selector?: string): Promise<ClusterView[]> {
    const query = selector ? `?selector=${encodeURIComponent(selector)}` : '';
    return (await this.#call<{ clusters: ClusterView[] }>('GET', `/hub/v1/clusters${query}`)).clusters;
  }

  /**
   * Every cluster that needs attention (`GET /hub/v1/attention`), read page
   * by page. A cluster that moves across a page boundary while the pages are
   * read is listed once; one that leaves the list meanwhile may be missed
   * until the next call.
   */
  async listAttention(request: AttentionRequest = {}): Promise<AttentionList> {
    const params = new URLSearchParams({ limit: String(ATTENTION_PAGE_SIZE) });
    if (request.selector) params.set('selector', request.selector);
    if (request.reason !== undefined) params.set('reason', request.reason);
    if (request.offlineForSeconds !== undefined) params.set('offlineFor', String(request.offlineForSeconds));
    if (request.certsWithinDays !== undefined) params.set('certsWithin', String(request.certsWithinDays));
    if (request.sort !== undefined) params.set('sort', request.sort);
    const page = (offset: number): Promise<AttentionPage> => {
      params.set('offset', String(offset));
      return this.#call('GET', `${ATTENTION_API_PATH}?${params.toString()}`);
    };
    const first = await page(0);
    const rows = new Map<string, AttentionRow>(first.rows.map((row) => [row.cluster.name, row]));
    // Bounded by the first page's total: a list that grows meanwhile is not followed forever.
    let offset = first.rows.length;
    while (offset < first.total) {
      const next = await page(offset);
      if (next.rows.length === 0) break;
      for (const row of next.rows) if (!rows.has(row.cluster.name)) rows.set(row.cluster.name, row);
      offset += next.rows.length;
    }
    const { offset: _offset, limit: _limit, ...rest } = first;
    return { ...rest, rows: [...rows.values()] };
  }

  getCluster(name: string): Promise<ClusterView> {
    return this.#call('GET', clusterPath(name));
  }

  /** Every live hub replica, its address, its tunnels, whether it leads. */
  async listReplicas(): Promise<ReplicaView[]> {
    return (await this.#call<{ replicas: ReplicaView[] }>('GET', '/hub/v1/replicas')).replicas;
  }

  deleteCluster(name: string): Promise<{ name: string; isDeleted: boolean }> {
    return this.#call('DELETE', clusterPath(name));
  }

  createUser(options: {
    name: string;
    clustersSelector: string;
    groups: string[];
    ttlMs: number;
  }): Promise<CreatedHubUser> {
    return this.#call('POST', '/hub/v1/users', options);
  }

  /**
   * Creates or updates a rollout from a document whose file references are
   * already read (see rollout/rollout-file.ts). With `dryRun` the hub stores
   * nothing and answers with the waves and each cluster's rendered copy.
   */
  applyRollout(document: RolloutDocument, options: { dryRun?: boolean } = {}): Promise<ApplyResult> {
    const query = options.dryRun === true ? '?dryRun=true' : '';
    return this.#call('PUT', rolloutPath(document.metadata.name, query), document, {
      timeoutMs: ROLLOUT_APPLY_TIMEOUT_MS,
      ...(options.dryRun === true && { maxResponseBytes: MAX_LARGE_RESPONSE_BYTES }),
    });
  }

  async listRollouts(): Promise<RolloutListItem[]> {
    return (await this.listRolloutsWithQuarantine()).rollouts;
  }

  /** The rollouts, and the stored ones the hub quarantined at its start (an older hub answers none). */
  async listRolloutsWithQuarantine(): Promise<{ rollouts: RolloutListItem[]; quarantined: QuarantinedRollout[] }> {
    const answer = await this.#call<{ rollouts: RolloutListItem[]; quarantined?: QuarantinedRollout[] }>(
      'GET',
      '/hub/v1/rollouts',
    );
    return { rollouts: answer.rollouts, quarantined: answer.quarantined ?? [] };
  }

  /** One rollout's status; with `clusters`, its per-cluster rows. */
  rolloutStatus(name: string, options: { clusters?: boolean } = {}): Promise<RolloutStatusView> {
    return this.#call('GET', rolloutPath(name, options.clusters === true ? '?clusters=true' : ''));
  }

  /**
   * Every change of a rollout's status, first the current one, as a long
   * poll (`?waitForChangeFrom=`): each call waits up to STATUS_LONG_POLL_MS
   * on the hub, so it crosses proxies and socket deadlines that a stream
   * would not. Ends after a view whose state is complete, halted or aborted,
   * or that is done wherever reachable (rollout-watch-end.ts: only offline
   * clusters are left).
   * When the hub cannot be reached (it restarts), the watch tries again for
   * up to {@link WATCH_RECONNECT_WINDOW_MS} before it gives up with
   * `E_HUB_UNREACHABLE`; any other error ends it at once.
   */
  async *watchRollout(name: string, options: WatchRolloutOptions = {}): AsyncGenerator<RolloutStatusView> {
    const sleep = options.sleep ?? ((ms: number, signal?: AbortSignal) => delay(ms, undefined, { signal }));
    const now = options.now ?? Date.now;
    const clusters = options.clusters === true ? '&clusters=true' : '';
    let last: RolloutStatusView | undefined;
    let unreachableSince: number | undefined;
    // A function, not the expression twice: TypeScript would narrow `aborted` inside the loop.
    const isStopped = (): boolean => options.signal?.aborted === true;
    while (!isStopped()) {
      let view: RolloutStatusView;
      try {
        view = await this.#call<RolloutStatusView>(
          'GET',
          last === undefined
            ? rolloutPath(name, clusters === '' ? '' : '?clusters=true')
            : rolloutPath(name, `?waitForChangeFrom=${last.statusVersion}${clusters}`),
          undefined,
          { timeoutMs: STATUS_LONG_POLL_MS + WATCH_POLL_GRACE_MS, signal: options.signal },
        );
      } catch (error) {
        // Aborting closes the pending long poll at once; the watch just ends.
        if (isStopped()) return;
        if (!isUnreachable(error)) throw error;
        unreachableSince ??= now();
        if (now() - unreachableSince >= WATCH_RECONNECT_WINDOW_MS) throw error;
        try {
          await sleep(WATCH_RECONNECT_DELAY_MS, options.signal);
        } catch {
          return;
        }
        continue;
      }
      unreachableSince = undefined;
      // An unchanged answer is the long poll running out: nothing to report.
      if (last !== undefined && view.statusVersion === last.statusVersion && view.state === last.state) continue;
      last = view;
      yield view;
      if (watchEndOf(view) !== undefined) return;
    }
  }

  pauseRollout(name: string): Promise<RolloutStatusView> {
    return this.#call('POST', rolloutPath(name, '/pause'));
  }

  resumeRollout(name: string): Promise<RolloutStatusView> {
    return this.#call('POST', rolloutPath(name, '/resume'));
  }

  abortRollout(name: string): Promise<RolloutStatusView> {
    return this.#call('POST', rolloutPath(name, '/abort'));
  }

  /** Rolls back to the previous revision's document (as a new revision). */
  undoRollout(name: string): Promise<RolloutStatusView> {
    return this.#call('POST', rolloutPath(name, '/undo'));
  }

  /** Removes the rollout and its objects from every cluster it reached (offline ones when they return). */
  deleteRollout(name: string): Promise<DeleteResult> {
    return this.#call('DELETE', rolloutPath(name));
  }

  /** The stored document of the current revision. */
  getRolloutDocument(name: string): Promise<{ revision: number; document: RolloutDocument }> {
    return this.#call('GET', rolloutPath(name, '/document'), undefined, {
      maxResponseBytes: MAX_LARGE_RESPONSE_BYTES,
    });
  }

  /** Holds a cluster (maintenance): no rollout changes it until {@link releaseCluster}. */
  holdCluster(name: string, reason: string): Promise<HeldClusterView> {
    return this.#call('PUT', clusterPath(name, '/hold'), { reason });
  }

  releaseCluster(name: string): Promise<HeldClusterView> {
    return this.#call('DELETE', clusterPath(name, '/hold'));
  }

  /** Sets the properties customization reads (`${property:KEY}`); the map replaces the previous one. */
  setClusterProperties(name: string, properties: Record<string, string>): Promise<HeldClusterView> {
    return this.#call('PUT', clusterPath(name, '/properties'), { properties });
  }
}
