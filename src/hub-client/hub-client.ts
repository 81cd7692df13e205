/**
 * The operator side of the hub API: what `hub token create`, `hub clusters`
 * and `hub user create` call. TLS is verified against the CA in the hub
 * config; the bearer token comes from it too.
 */
import type { Agent as HttpsAgent } from 'node:https';
import { EdgeadmError } from '../errors.js';
import type { HubConfig } from '../hub/hub-config.js';
import { errorFromApi } from '../hub/http-replies.js';
import type { ClusterView } from '../hub/operator-api.js';

/** How long one API call may take. */
export const HUB_CLIENT_TIMEOUT_MS = 30_000;
/** Largest answer read. */
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

/** What `POST /hub/v1/tokens` returns. */
export interface CreatedHubToken {
  token: string;
  id: string;
  expiresAt?: string;
  usages?: number;
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
}

/** One JSON call to the hub; typed errors for refusals. */
export async function callHub<T>(options: HubCallOptions): Promise<T> {
  const { request } = await import('node:https');
  const url = new URL(options.path, options.server);
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise<T>((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method,
        ca: options.caPem,
        rejectUnauthorized: true,
        agent: options.agent ?? false,
        timeout: HUB_CLIENT_TIMEOUT_MS,
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
          if (size > MAX_RESPONSE_BYTES) req.destroy(new Error('the hub answer is too large'));
          else chunks.push(chunk);
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status < 200 || status >= 300) {
            reject(errorFromApi(status, text));
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

/** The operator API, bound to one hub config. */
export class HubClient {
  constructor(readonly config: HubConfig) {}

  #call<T>(method: string, path: string, body?: unknown): Promise<T> {
    return callHub<T>({
      server: this.config.server,
      caPem: this.config.caPem,
      token: this.config.token,
      method,
      path,
      body,
    });
  }

  createToken(options: { ttlMs: number; usages?: number }): Promise<CreatedHubToken> {
    return this.#call('POST', '/hub/v1/tokens', options);
  }

  async listClusters(selector?: string): Promise<ClusterView[]> {
    const query = selector ? `?selector=${encodeURIComponent(selector)}` : '';
    return (await this.#call<{ clusters: ClusterView[] }>('GET', `/hub/v1/clusters${query}`)).clusters;
  }

  getCluster(name: string): Promise<ClusterView> {
    return this.#call('GET', `/hub/v1/clusters/${encodeURIComponent(name)}`);
  }

  deleteCluster(name: string): Promise<{ name: string; isDeleted: boolean }> {
    return this.#call('DELETE', `/hub/v1/clusters/${encodeURIComponent(name)}`);
  }

  createUser(options: {
    name: string;
    clustersSelector: string;
    groups: string[];
    ttlMs: number;
  }): Promise<CreatedHubUser> {
    return this.#call('POST', '/hub/v1/users', options);
  }
}
