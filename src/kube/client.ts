/**
 * A small typed Kubernetes API client over node:https: JSON requests with a
 * bearer token or client certificate, verified against the cluster CA, and
 * the handful of verbs edgeadm's workflows need (get, list, create,
 * replace, merge-patch, server-side apply, delete).
 *
 * Why not @kubernetes/client-node: edgeadm makes fewer than ten kinds of
 * request, the library adds a large dependency tree to the single binary,
 * and its module graph creates handles at import time that the binary's
 * startup snapshot cannot hold unless everything is carefully deferred. A
 * client this size has every timeout and size limit in view. node:https is
 * imported at the point of use for the same snapshot reason.
 */
import type { IncomingMessage } from 'node:http';
import type * as HttpsModule from 'node:https';
import type { Agent as HttpsAgent } from 'node:https';
import type { createSecureContext as CreateSecureContext, SecureContext } from 'node:tls';
import { EdgeadmError } from '../errors.js';
import type { KubeCredentials } from './kubeconfig.js';

/** The most one request may take. */
export const KUBE_REQUEST_TIMEOUT_MS = 15_000;
/** The largest response body read. */
export const MAX_KUBE_RESPONSE_BYTES = 16 * 1024 * 1024;
/** The field manager edgeadm applies as. */
export const EDGEADM_FIELD_MANAGER = 'edgeadm';

/** A Kubernetes object, loosely typed. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion?: string;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

/** A list answer. */
export interface KubeList<T extends KubeObject = KubeObject> {
  items: T[];
}

/** The API server answered with an error status. */
export class KubeApiError extends EdgeadmError {
  readonly status: number;
  readonly reason: string | undefined;

  constructor(options: { method: string; path: string; status: number; message: string; reason?: string }) {
    super(`${options.method} ${options.path}: ${options.status} ${options.message}`, {
      code: options.status === 401 || options.status === 403 ? 'E_KUBE_FORBIDDEN' : 'E_KUBE_API',
      details: { status: options.status, reason: options.reason, path: options.path },
    });
    this.name = 'KubeApiError';
    this.status = options.status;
    this.reason = options.reason;
  }
}

/** Options of one request. */
export interface KubeRequestOptions {
  body?: unknown;
  contentType?: string;
  query?: Record<string, string>;
  /** Longest silence on the connection (the socket's idle timeout); {@link KUBE_REQUEST_TIMEOUT_MS} by default. */
  timeoutMs?: number;
  /**
   * Longest time for the whole request, from the call until the body is
   * read: waiting for a free connection, sending, and an answer that trickles
   * in included. Overrides the client's {@link KubeClientOptions.requestDeadlineMs}.
   */
  deadlineMs?: number;
}

/**
 * Whom the client's requests act as (`Impersonate-User` / `Impersonate-Group`):
 * the API server checks that the client's own identity may impersonate, then
 * judges every request by this user's RBAC.
 */
export interface KubeImpersonation {
  user: string;
  groups: readonly string[];
}

/** Options of a {@link KubeClient} besides its credentials. */
export interface KubeClientOptions {
  impersonate?: KubeImpersonation;
  /**
   * Keep connections to the API server open between requests (a client
   * that polls, like the rollout agent, then pays one TLS handshake, not
   * one per request). {@link KubeClient.close} closes them.
   */
  isKeepAlive?: boolean;
  /**
   * A deadline for every request of this client, whatever it waits for (see
   * {@link KubeRequestOptions.deadlineMs}). Without it only the idle timeout
   * applies, and a request queued behind the keep-alive pool's busy
   * connections, or answered a byte at a time, can wait for ever.
   */
  requestDeadlineMs?: number;
}

/** Most connections a keep-alive client holds to its API server. */
const KEEP_ALIVE_MAX_SOCKETS = 4;

/**
 * node:https and node:tls, imported once at first use (not at load, for the
 * startup snapshot): an `import()` per request costs a module-loader
 * round trip each time, which showed in profiles of agents that poll.
 */
let transport: Promise<{ https: typeof HttpsModule; createSecureContext: typeof CreateSecureContext }> | undefined;
function loadTransport(): NonNullable<typeof transport> {
  transport ??= Promise.all([import('node:https'), import('node:tls')]).then(([https, tls]) => ({
    https,
    createSecureContext: tls.createSecureContext,
  }));
  return transport;
}

/** A raw answer: status and body text. */
export interface KubeResponse {
  status: number;
  body: string;
}

/** The client. Stateless apart from its credentials; one per cluster. */
export class KubeClient {
  readonly server: string;
  readonly #credentials: KubeCredentials;
  readonly #impersonate: KubeImpersonation | undefined;
  readonly #isKeepAlive: boolean;
  readonly #requestDeadlineMs: number | undefined;
  /**
   * The keep-alive pool, and the CA and client certificate parsed once
   * (passed as PEM to each request, they are parsed again for every new
   * connection). Shared with the clients made by {@link impersonating}.
   */
  #connections: { agent?: HttpsAgent; secureContext?: SecureContext } = {};
  /** False for a client made by {@link impersonating}: the client it came from closes the pool. */
  #ownsConnections = true;

  constructor(credentials: KubeCredentials, options: KubeClientOptions = {}) {
    this.#credentials = credentials;
    this.#impersonate = options.impersonate;
    this.#isKeepAlive = options.isKeepAlive === true;
    this.#requestDeadlineMs = options.requestDeadlineMs;
    this.server = credentials.server.replace(/\/+$/, '');
  }

  /**
   * The same client acting as `who` (its own credentials, `who`
   * impersonated), on this client's connections: requests as several users
   * to one API server then share one keep-alive pool, not one each.
   * Closing it closes nothing; closing this client closes the pool.
   */
  impersonating(who: KubeImpersonation): KubeClient {
    const client = new KubeClient(this.#credentials, {
      impersonate: who,
      isKeepAlive: this.#isKeepAlive,
      ...(this.#requestDeadlineMs === undefined ? {} : { requestDeadlineMs: this.#requestDeadlineMs }),
    });
    client.#connections = this.#connections;
    client.#ownsConnections = false;
    return client;
  }

  /** Closes the connections a keep-alive client holds; a later request opens new ones. */
  close(): void {
    if (!this.#ownsConnections) return;
    this.#connections.agent?.destroy();
    delete this.#connections.agent;
  }

  /** One request; any status is returned (transport failures throw `E_KUBE_UNREACHABLE`). */
  async raw(method: string, path: string, options: KubeRequestOptions = {}): Promise<KubeResponse> {
    const { https, createSecureContext } = await loadTransport();
    const { request, Agent } = https;
    const connections = this.#connections;
    if (this.#isKeepAlive) connections.agent ??= new Agent({ keepAlive: true, maxSockets: KEEP_ALIVE_MAX_SOCKETS });
    const url = new URL(this.server + path);
    for (const [key, value] of Object.entries(options.query ?? {})) url.searchParams.set(key, value);
    const credentials = this.#credentials;
    const body =
      options.body === undefined
        ? undefined
        : Buffer.from(typeof options.body === 'string' ? options.body : JSON.stringify(options.body));
    const headers: Record<string, string | string[]> = { Accept: 'application/json' };
    if (credentials.token !== undefined) headers.Authorization = `Bearer ${credentials.token}`;
    if (this.#impersonate !== undefined) {
      headers['Impersonate-User'] = this.#impersonate.user;
      if (this.#impersonate.groups.length > 0) headers['Impersonate-Group'] = [...this.#impersonate.groups];
    }
    if (body !== undefined) {
      headers['Content-Type'] = options.contentType ?? 'application/json';
      headers['Content-Length'] = String(body.length);
    }
    const timeoutMs = options.timeoutMs ?? KUBE_REQUEST_TIMEOUT_MS;
    const deadlineMs = options.deadlineMs ?? this.#requestDeadlineMs;
    return new Promise<KubeResponse>((resolve, reject) => {
      let isSettled = false;
      let deadline: NodeJS.Timeout | undefined;
      const unreachable = (error: Error & { code?: string }): EdgeadmError =>
        new EdgeadmError(`cannot reach the API server at ${this.server}: ${error.message}`, {
          code: 'E_KUBE_UNREACHABLE',
          cause: error,
          details: { server: this.server, errorCode: error.code },
        });
      const settle = (outcome: { response: KubeResponse } | { error: Error }): void => {
        if (isSettled) return;
        isSettled = true;
        clearTimeout(deadline);
        if ('response' in outcome) resolve(outcome.response);
        else reject(outcome.error);
      };
      // tls.connect takes the parsed context as is (node:https passes its options through).
      const requestOptions: HttpsModule.RequestOptions & { secureContext: SecureContext } = {
        method,
        headers,
        secureContext: (connections.secureContext ??= createSecureContext({
          ...(credentials.caPem === undefined ? {} : { ca: credentials.caPem }),
          ...(credentials.clientCertificatePem === undefined ? {} : { cert: credentials.clientCertificatePem }),
          ...(credentials.clientKeyPem === undefined ? {} : { key: credentials.clientKeyPem }),
        })),
        agent: connections.agent ?? false,
      };
      const req = request(url, requestOptions, (response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_KUBE_RESPONSE_BYTES) {
            req.destroy(new Error(`the response is larger than ${MAX_KUBE_RESPONSE_BYTES} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        response.on('end', () =>
          settle({ response: { status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') } }),
        );
        response.on('error', (error: Error) => settle({ error: unreachable(error) }));
        // A connection that closes mid-answer without an error event must not leave the caller waiting.
        response.on('close', () => {
          if (!response.complete) settle({ error: unreachable(new Error('the connection closed mid-answer')) });
        });
      });
      if (deadlineMs !== undefined) {
        deadline = setTimeout(() => {
          const error = new Error(`no complete answer within ${deadlineMs} ms`);
          settle({ error: unreachable(error) });
          req.destroy(error);
        }, deadlineMs);
        deadline.unref();
      }
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on('error', (error: Error & { code?: string }) => settle({ error: unreachable(error) }));
      req.end(body);
    });
  }

  /**
   * A GET whose answer is streamed (a WATCH): resolves with the response
   * once its head arrives (2xx only; otherwise the error as {@link request}
   * throws it). The caller reads it with backpressure and ends it by
   * aborting `signal`; the connection is never the keep-alive pool's.
   */
  async stream(path: string, query: Record<string, string>, signal: AbortSignal): Promise<IncomingMessage> {
    const { https, createSecureContext } = await loadTransport();
    const url = new URL(this.server + path);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const credentials = this.#credentials;
    const headers: Record<string, string | string[]> = { Accept: 'application/json' };
    if (credentials.token !== undefined) headers.Authorization = `Bearer ${credentials.token}`;
    const secureContext = (this.#connections.secureContext ??= createSecureContext({
      ...(credentials.caPem === undefined ? {} : { ca: credentials.caPem }),
      ...(credentials.clientCertificatePem === undefined ? {} : { cert: credentials.clientCertificatePem }),
      ...(credentials.clientKeyPem === undefined ? {} : { key: credentials.clientKeyPem }),
    }));
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const options: HttpsModule.RequestOptions & { secureContext: SecureContext } = {
        method: 'GET',
        headers,
        secureContext,
        agent: false,
        signal,
      };
      const req = https.request(url, options, (response) => {
        // The head came: from here the stream may be quiet for long; its reader bounds it (the watch's timeoutSeconds).
        req.setTimeout(0);
        resolve(response);
      });
      req.setTimeout(KUBE_REQUEST_TIMEOUT_MS, () =>
        req.destroy(new Error(`no answer within ${KUBE_REQUEST_TIMEOUT_MS} ms`)),
      );
      req.on('error', (error: Error) =>
        reject(
          new EdgeadmError(`cannot reach the API server at ${this.server}: ${error.message}`, {
            code: 'E_KUBE_UNREACHABLE',
            cause: error,
          }),
        ),
      );
      req.end();
    });
    const status = response.statusCode ?? 0;
    if (status >= 200 && status < 300) return response;
    const chunks: Buffer[] = [];
    for await (const chunk of response) chunks.push(chunk as Buffer);
    throw apiError('GET', path, { status, body: Buffer.concat(chunks).toString('utf8').slice(0, 4096) });
  }

  /** A request whose answer must be 2xx; returns the parsed body. */
  async request<T>(method: string, path: string, options: KubeRequestOptions = {}): Promise<T> {
    const response = await this.raw(method, path, options);
    if (response.status < 200 || response.status >= 300) throw apiError(method, path, response);
    return (response.body === '' ? undefined : JSON.parse(response.body)) as T;
  }

  /** GET an object; undefined when it does not exist. */
  async get<T extends KubeObject>(path: string): Promise<T | undefined> {
    const response = await this.raw('GET', path);
    if (response.status === 404) return undefined;
    if (response.status < 200 || response.status >= 300) throw apiError('GET', path, response);
    return JSON.parse(response.body) as T;
  }

  /** LIST a collection, optionally by label or field selector. */
  async list<T extends KubeObject>(
    path: string,
    selectors: { labelSelector?: string; fieldSelector?: string } = {},
  ): Promise<T[]> {
    const query: Record<string, string> = {};
    if (selectors.labelSelector) query.labelSelector = selectors.labelSelector;
    if (selectors.fieldSelector) query.fieldSelector = selectors.fieldSelector;
    return (await this.request<KubeList<T>>('GET', path, { query })).items ?? [];
  }

  /** POST to a collection. */
  async create<T extends KubeObject>(collectionPath: string, object: T): Promise<T> {
    return this.request<T>('POST', collectionPath, { body: object });
  }

  /** PUT an object (needs its current resourceVersion to avoid a conflict). */
  async replace<T extends KubeObject>(path: string, object: T): Promise<T> {
    return this.request<T>('PUT', path, { body: object });
  }

  /** JSON merge patch. */
  async mergePatch<T extends KubeObject>(path: string, patch: unknown): Promise<T> {
    return this.request<T>('PATCH', path, { body: patch, contentType: 'application/merge-patch+json' });
  }

  /**
   * Server-side apply as {@link EDGEADM_FIELD_MANAGER}; an identical
   * re-apply changes nothing (the returned resourceVersion stays).
   */
  async apply<T extends KubeObject>(path: string, object: T, options: { force?: boolean } = {}): Promise<T> {
    return this.request<T>('PATCH', path, {
      body: object,
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: EDGEADM_FIELD_MANAGER, ...(options.force ? { force: 'true' } : {}) },
    });
  }

  /** DELETE; false when there was nothing to delete. */
  async delete(path: string): Promise<boolean> {
    const response = await this.raw('DELETE', path);
    if (response.status === 404) return false;
    if (response.status < 200 || response.status >= 300) throw apiError('DELETE', path, response);
    return true;
  }
}

function apiError(method: string, path: string, response: KubeResponse): KubeApiError {
  let message = response.body.slice(0, 500);
  let reason: string | undefined;
  try {
    const status = JSON.parse(response.body) as { message?: string; reason?: string };
    if (status.message) message = status.message;
    reason = status.reason;
  } catch {
    // Not a Status object: keep the text.
  }
  return new KubeApiError({ method, path, status: response.status, message, ...(reason ? { reason } : {}) });
}

/** The path of a core (v1) object or collection. */
export function corePath(resource: string, options: { namespace?: string; name?: string } = {}): string {
  return `/api/v1${options.namespace ? `/namespaces/${options.namespace}` : ''}/${resource}${options.name ? `/${options.name}` : ''}`;
}

/** The path of a grouped object or collection (`rbac.authorization.k8s.io/v1`). */
export function groupPath(
  groupVersion: string,
  resource: string,
  options: { namespace?: string; name?: string } = {},
): string {
  return `/apis/${groupVersion}${options.namespace ? `/namespaces/${options.namespace}` : ''}/${resource}${options.name ? `/${options.name}` : ''}`;
}
