/**
 * The k3s supervisor, as the node's k3s agent sees it through the
 * edge-proxy (`--k3s-supervisor`): what the proxy forwards, keeps and
 * answers so the agent starts, and its kubelet runs, while the server is
 * unreachable (src/edge/README.md, "k3s agents and offline reboots").
 *
 * A k3s agent asks its supervisor for its configuration and certificates at
 * every start, before its kubelet runs, and waits until it gets them (k3s
 * `pkg/agent/config/config.go`, `get`; k3s#10036): `/cacerts` and the paths
 * of {@link K3S_AGENT_START_PATHS}. The proxy forwards them while online,
 * with the caller's own credentials and `k3s-Node-*` headers as for any
 * request, and keeps each 200 answer: `/cacerts` (the server CA, public:
 * k3s serves it to anyone) under one key; a start-up answer under
 *
 * - the caller's identity key (the keyed hash of its bearer token or its
 *   mapped client certificate, as every other entry), and
 * - a keyed hash of the node name and node password it sent (the password
 *   is what k3s's supervisor checks the node's certificates against).
 *
 * While the upstream is unreachable the same request, with the same
 * credentials, node name and password, gets the kept answer; any other gets
 * 503 and nothing else. So a kept answer (the node's certificates and keys)
 * only reaches a caller that could already read them from the node's own
 * files. The node IP is not part of the key: it is not an identity and may
 * change across a reboot; the answer is the one the node already holds.
 *
 * The proxy answers itself, online and offline:
 *
 * - `/v1-k3s/apiservers` with its own address, to a caller the server
 *   accepts (online: the server's answer to the caller's credentials;
 *   offline: an identity it accepted before, or the node's kubelet
 *   certificate): the agent's load balancer switches to the addresses it
 *   gets there, and would leave the proxy for the real servers (k3s
 *   `pkg/agent/config`, `APIServers`; `pkg/agent/tunnel`, `getAPIServersRequester`).
 *
 * And, offline only, to the node's own kubelet certificate (a mapped
 * `system:node:` CN; {@link isNodeCertificate}):
 *
 * - the `/v1-k3s/connect` websocket, accepted and held open with nothing on
 *   it (no remotedialer frames), and closed when the server is back so the
 *   agent opens it again, through the proxy, to the server (k3s's
 *   `tunnel.Setup` waits for this websocket before it starts the kubelet);
 * - `/readyz` and `/v1-k3s/readyz`: ready when the cache holds entries to
 *   serve (k3s ends the agent when `/readyz` does not answer within
 *   `DefaultAPIServerReadyTimeout`).
 *
 * That is a deliberate policy: while cut off, the proxy is the node's view
 * of the control plane. The agent believes it has a tunnel and a ready API
 * server; the kubelet believes what the cache holds. Nothing is gained that
 * the node did not have: nothing travels on the held tunnel (the server
 * uses it to reach the node's kubelet for exec, logs and port-forward, and
 * the server cannot reach the node anyway while it is cut off), and every
 * write but node registration is still refused (offline-writes.ts). Online,
 * the websocket and `/readyz` are forwarded: the server answers them.
 *
 * Everything else under `/v1-k3s/` is forwarded while online and refused
 * offline with a 503 that says why.
 */
import { createHash, createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ApiPath } from '../kube/api-path.js';
import type { Logger } from '../log/run-log.js';
import { apiStatus, rawStatusResponse, sendStatus } from './api-status.js';
import type { DiskCache } from './disk-cache.js';
import { forwardHeaders } from './forward-headers.js';
import { MAX_HELD_K3S_TUNNELS, MAX_K3S_SUPERVISOR_ANSWER_BYTES } from './limits.js';
import type { RequestCounters } from './metrics.js';
import { isUnreachableError, type UpstreamClient } from './upstream-client.js';
import type { UpstreamState } from './upstream-state.js';

/** The supervisor paths a k3s agent asks at every start, before its kubelet (k3s pkg/agent/config, `get`). */
export const K3S_AGENT_START_PATHS: ReadonlySet<string> = new Set([
  '/v1-k3s/config',
  '/v1-k3s/client-ca.crt',
  '/v1-k3s/server-ca.crt',
  '/v1-k3s/serving-kubelet.crt',
  '/v1-k3s/client-kubelet.crt',
  '/v1-k3s/client-kube-proxy.crt',
  '/v1-k3s/client-k3s-controller.crt',
]);

/** The server CA bundle, served by k3s's supervisor to anyone (k3s pkg/server/handlers, `CACerts`). */
export const K3S_CACERTS_PATH = '/cacerts';
/** The addresses the agent's load balancer and tunnels use (k3s pkg/server/handlers, `APIServers`). */
export const K3S_APISERVERS_PATH = '/v1-k3s/apiservers';
/** The agent's tunnel websocket (k3s pkg/agent/tunnel, `Setup`). */
export const K3S_CONNECT_PATH = '/v1-k3s/connect';
/** The readiness paths answered offline: the API server's, which the agent waits for, and the supervisor's. */
const READINESS_PATHS: ReadonlySet<string> = new Set(['/readyz', '/v1-k3s/readyz']);
/** The websocket handshake's GUID (RFC 6455, section 1.3). */
const WEBSOCKET_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** The one cache key of `/cacerts`: the same public bytes for every caller. */
const CACERTS_KEY = 'k3s-supervisor /cacerts';

/** Whether a path is one this module answers for (`/cacerts`, `/v1-k3s/…`, readiness while offline). Pure. */
export function isK3sSupervisorPath(path: string, isOnline = true): boolean {
  return path === K3S_CACERTS_PATH || path.startsWith('/v1-k3s/') || (!isOnline && READINESS_PATHS.has(path));
}

/**
 * Whether a mapped client certificate CN is a node's kubelet certificate
 * (`system:node:<name>`, as k3s issues it at `/v1-k3s/client-kubelet.crt`):
 * the only identity the proxy holds a tunnel for or calls itself ready to.
 * join maps only the node's own such certificate. Pure.
 */
export function isNodeCertificate(clientCertCn: string | undefined): boolean {
  return clientCertCn !== undefined && /^system:node:[^:\s]+$/.test(clientCertCn);
}

/** One header's single value, or '' (absent, empty or repeated: a repeated header is not one node). Pure. */
function singleHeader(value: string | string[] | undefined): string {
  return typeof value === 'string' ? value : '';
}

/**
 * The cache key of a start-up answer: the caller's identity key, the path,
 * and a keyed hash of the node name and password it sent. Pure.
 */
export function k3sStartKeyOf(
  installKey: Buffer,
  identityKey: string,
  path: string,
  headers: IncomingMessage['headers'],
): string {
  const node = createHmac('sha256', installKey)
    .update(JSON.stringify([singleHeader(headers['k3s-node-name']), singleHeader(headers['k3s-node-password'])]))
    .digest('hex');
  return `${identityKey} k3s-supervisor ${path}?node=${node}`;
}

/** The body of the proxy's `/v1-k3s/apiservers` answer: its own address, as k3s lists `host:port`. Pure. */
export function apiServersAnswer(ownAddress: string): string {
  return JSON.stringify([ownAddress]);
}

/** What the supervisor part needs from the proxy. */
export interface K3sSupervisorParts {
  cache: DiskCache;
  upstream: UpstreamClient;
  state: UpstreamState;
  counters: RequestCounters;
  logger: Logger;
  /** The proxy's own `host:port`, answered at `/v1-k3s/apiservers`. */
  ownAddress(): string;
}

/** Who asks: the identity key, the mapped certificate, and whether any credential was presented. */
export interface K3sCaller {
  identityKey: string;
  clientCertCn: string | undefined;
  /** False for a request with no credentials at all. */
  isAuthenticated: boolean;
}

/** Answers `/v1-k3s/…` requests: forwarded and kept online, from what was kept offline. */
export class K3sSupervisorAnswers {
  /** Tunnels held offline, closed when the server is back. */
  readonly #heldTunnels = new Set<Duplex>();

  constructor(private readonly parts: K3sSupervisorParts) {}

  /** Tunnels held open now (for metrics and tests). */
  get heldTunnels(): number {
    return this.#heldTunnels.size;
  }

  /** Handles one request whose path {@link isK3sSupervisorPath} accepted. */
  async handle(req: IncomingMessage, res: ServerResponse, target: ApiPath, caller: K3sCaller): Promise<void> {
    const { identityKey, clientCertCn } = caller;
    const method = req.method ?? 'GET';
    if (method === 'GET' && target.path === K3S_APISERVERS_PATH) {
      await this.#answerApiServers(req, res, target, caller);
      return;
    }
    // A query the key does not hold makes the request one that is only forwarded.
    const isGet = method === 'GET' && target.query === '';
    const key =
      isGet && target.path === K3S_CACERTS_PATH
        ? CACERTS_KEY
        : isGet && K3S_AGENT_START_PATHS.has(target.path)
          ? k3sStartKeyOf(this.parts.cache.installKey, identityKey, target.path, req.headers)
          : undefined;
    if (!this.parts.state.isOnline) {
      await this.#answerOffline(req, res, target, key, clientCertCn);
      return;
    }
    let answer: { status: number; headers: IncomingMessage['headers']; body: Buffer } | undefined;
    try {
      answer = await this.#forward(req, target.target, clientCertCn, key !== undefined);
    } catch (error) {
      if (!isUnreachableError(error)) throw error;
      this.parts.state.markUnreachable(`${target.path}: ${(error as Error).message}`);
      await this.#answerOffline(req, res, target, key, clientCertCn);
      return;
    }
    if (answer === undefined) return void res.destroy();
    this.parts.counters.count('forwarded');
    if (key !== undefined && answer.status === 200) {
      await this.parts.cache.put({
        meta: {
          key,
          identityKey: key === CACERTS_KEY ? 'k3s-supervisor' : identityKey,
          path: target.path,
          contentType: singleHeader(answer.headers['content-type']) || 'text/plain',
          storedAt: new Date().toISOString(),
        },
        body: answer.body,
      });
    }
    const headers: Record<string, string> = { 'Content-Length': String(answer.body.length) };
    const contentType = singleHeader(answer.headers['content-type']);
    if (contentType) headers['Content-Type'] = contentType;
    res.writeHead(answer.status, headers);
    res.end(answer.body);
  }

  /**
   * An upgrade to a supervisor path while offline: the node's tunnel
   * websocket is accepted and held; anything else is refused. Returns false
   * when the request is not this module's (online: it is forwarded).
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, target: ApiPath, clientCertCn: string | undefined): boolean {
    if (this.parts.state.isOnline || !target.path.startsWith('/v1-k3s/')) return false;
    const key = req.headers['sec-websocket-key'];
    const isTunnel =
      target.path === K3S_CONNECT_PATH &&
      (req.method ?? 'GET') === 'GET' &&
      req.headers.upgrade?.toLowerCase() === 'websocket' &&
      typeof key === 'string' &&
      key !== '';
    const refusal = !isTunnel
      ? `edge-proxy: the k3s server is unreachable; ${target.path} is answered only by the server`
      : !isNodeCertificate(clientCertCn)
        ? `edge-proxy: the k3s server is unreachable; only the node's own kubelet certificate may hold ${K3S_CONNECT_PATH} meanwhile`
        : this.#heldTunnels.size >= MAX_HELD_K3S_TUNNELS
          ? `edge-proxy: the k3s server is unreachable and ${MAX_HELD_K3S_TUNNELS} tunnels are held already (the most this proxy holds)`
          : undefined;
    if (refusal !== undefined) {
      this.parts.counters.count('write_refused_offline');
      socket.end(rawStatusResponse(apiStatus(503, 'ServiceUnavailable', refusal)));
      return true;
    }
    const accept = createHash('sha1').update(`${key}${WEBSOCKET_GUID}`).digest('base64');
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
    );
    this.parts.counters.count('tunnel_held_offline');
    this.parts.logger.info(`edge-proxy: holding the k3s tunnel of ${clientCertCn} while the server is unreachable`);
    // Nothing is read from it: what the agent sends is dropped, never buffered.
    socket.on('data', () => {});
    this.#heldTunnels.add(socket);
    const cancel = this.parts.state.onceOnline(() => {
      // The server is back: the agent opens its tunnel again, now forwarded to the server.
      this.parts.logger.info(`edge-proxy: the k3s server is back; closing the held tunnel of ${clientCertCn}`);
      socket.destroy();
    });
    socket.once('close', () => {
      cancel();
      this.#heldTunnels.delete(socket);
    });
    return true;
  }

  /** The upstream's whole answer (bounded); undefined when it was too large to hold. */
  #forward(
    req: IncomingMessage,
    raw: string,
    clientCertCn: string | undefined,
    isKept: boolean,
  ): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer } | undefined> {
    return new Promise((resolve, reject) => {
      const out = this.parts.upstream.request({
        method: req.method ?? 'GET',
        path: raw,
        headers: forwardHeaders(req.headers, clientCertCn, false),
        clientCertCn,
      });
      out.on('error', reject);
      out.on('response', (answer) => {
        const chunks: Buffer[] = [];
        let size = 0;
        answer.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_K3S_SUPERVISOR_ANSWER_BYTES) {
            this.parts.logger.warn(`edge-proxy: ${raw}: answer larger than ${MAX_K3S_SUPERVISOR_ANSWER_BYTES} bytes`);
            answer.destroy();
            resolve(undefined);
          } else chunks.push(chunk);
        });
        answer.on('end', () =>
          resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: Buffer.concat(chunks) }),
        );
        answer.on('error', reject);
      });
      if (isKept) out.end();
      else req.pipe(out);
    });
  }

  /**
   * `/v1-k3s/apiservers`, answered with the proxy's own address to a caller
   * the server accepts, as its neighbours are: online the request is
   * forwarded with the caller's credentials, the server's refusal is passed
   * on, and its 200 is kept (for this identity) and answered with the
   * proxy's address instead of the server's; offline it is answered to an
   * identity the server accepted before, or to the node's own kubelet
   * certificate (issue #40: any Authorization value got the answer).
   */
  async #answerApiServers(req: IncomingMessage, res: ServerResponse, target: ApiPath, caller: K3sCaller) {
    const ownAnswer = (): void => {
      this.parts.counters.count('answered_by_proxy');
      const body = apiServersAnswer(this.parts.ownAddress());
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) });
      res.end(body);
    };
    if (!caller.isAuthenticated) {
      req.resume();
      this.parts.counters.count('unauthorized');
      sendStatus(res, apiStatus(401, 'Unauthorized', 'edge-proxy: /v1-k3s/apiservers needs credentials'));
      return;
    }
    const key = `${caller.identityKey} k3s-supervisor ${K3S_APISERVERS_PATH}`;
    if (this.parts.state.isOnline) {
      let answer: { status: number; headers: IncomingMessage['headers']; body: Buffer } | undefined;
      try {
        answer = await this.#forward(req, target.target, caller.clientCertCn, true);
      } catch (error) {
        if (!isUnreachableError(error)) throw error;
        this.parts.state.markUnreachable(`${target.path}: ${(error as Error).message}`);
      }
      if (answer !== undefined) {
        if (answer.status !== 200) {
          // The server's refusal (401 for credentials it does not accept), as the server gave it.
          this.parts.counters.count('forwarded');
          const headers: Record<string, string> = { 'Content-Length': String(answer.body.length) };
          const contentType = singleHeader(answer.headers['content-type']);
          if (contentType) headers['Content-Type'] = contentType;
          res.writeHead(answer.status, headers);
          res.end(answer.body);
          return;
        }
        await this.parts.cache.put({
          meta: {
            key,
            identityKey: caller.identityKey,
            path: target.path,
            contentType: 'application/json',
            storedAt: new Date().toISOString(),
          },
          body: Buffer.from(apiServersAnswer(this.parts.ownAddress())),
        });
        ownAnswer();
        return;
      }
      if (this.parts.state.isOnline) return void res.destroy();
    }
    req.resume();
    if (isNodeCertificate(caller.clientCertCn) || (await this.parts.cache.get(key)) !== undefined) {
      ownAnswer();
      return;
    }
    this.parts.counters.count('cache_miss_offline');
    sendStatus(
      res,
      apiStatus(
        503,
        'ServiceUnavailable',
        `edge-proxy: the k3s server is unreachable and ${K3S_APISERVERS_PATH} was never answered to these credentials`,
      ),
    );
  }

  async #answerOffline(
    req: IncomingMessage,
    res: ServerResponse,
    target: ApiPath,
    key: string | undefined,
    clientCertCn: string | undefined,
  ) {
    req.resume();
    const path = target.path;
    if (READINESS_PATHS.has(path) && (req.method ?? 'GET') === 'GET') {
      // The proxy is the node's view of the control plane while cut off: ready when it has a cache to serve.
      if (isNodeCertificate(clientCertCn) && this.parts.cache.entryCount > 0) {
        this.parts.counters.count('answered_by_proxy');
        res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'x-edgeadm-edge-proxy': 'offline; ready' });
        res.end('ok');
        return;
      }
      this.parts.counters.count('cache_miss_offline');
      sendStatus(
        res,
        apiStatus(
          503,
          'ServiceUnavailable',
          `edge-proxy: the k3s server is unreachable; ${path} is answered offline only to the node's own kubelet certificate, from a cache that holds entries`,
        ),
      );
      return;
    }
    const entry = key === undefined ? undefined : await this.parts.cache.get(key);
    if (entry === undefined) {
      this.parts.counters.count(key === undefined ? 'write_refused_offline' : 'cache_miss_offline');
      sendStatus(
        res,
        apiStatus(
          503,
          'ServiceUnavailable',
          key === undefined
            ? `edge-proxy: the k3s server is unreachable; ${path} is answered only by the server`
            : `edge-proxy: the k3s server is unreachable and ${path} was never answered to these credentials and this node name and password`,
        ),
      );
      return;
    }
    this.parts.counters.count('cache_hit_offline');
    res.writeHead(200, {
      'Content-Type': entry.meta.contentType,
      'Content-Length': String(entry.body.length),
      'x-edgeadm-edge-proxy': `cached; stored=${entry.meta.storedAt}`,
    });
    res.end(entry.body);
  }
}
