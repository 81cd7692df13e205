/**
 * The k3s supervisor's start-up answers, kept for one node so its agent can
 * start while the server is unreachable (`--k3s-supervisor`).
 *
 * A k3s agent asks its server's supervisor for its configuration and
 * certificates at every start, before its kubelet runs, and waits until it
 * gets them (k3s `pkg/agent/config/config.go`, `get`; k3s#10036). Those are
 * the paths of {@link K3S_AGENT_START_PATHS}. With this option the proxy
 * forwards them while online, with the caller's own credentials and its
 * `k3s-Node-*` headers as for any request, and keeps each 200 answer under
 * a key made of:
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
 * Everything else under `/v1-k3s/` is forwarded while online and refused
 * offline with a 503 that says why: `/connect` (the tunnel needs the
 * server), `/apiservers`, `/readyz`, and what only a server can do.
 *
 * Not enough on its own, and not wired (see src/edge/README.md, "k3s agents and offline reboots"):
 * a k3s agent is not pointed at the proxy (its `server` and the token's CA
 * hash), the answers that would then have to name the proxy (`/cacerts`,
 * `/v1-k3s/server-ca.crt`, `/v1-k3s/apiservers`) are not given, and after
 * the start-up answers the agent still waits for its `/connect` tunnel
 * before it starts its kubelet (k3s pkg/agent/tunnel, `Setup`).
 */
import { createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApiPath } from '../kube/api-path.js';
import type { Logger } from '../log/run-log.js';
import { apiStatus, sendStatus } from './api-status.js';
import type { DiskCache } from './disk-cache.js';
import { forwardHeaders } from './forward-headers.js';
import { MAX_K3S_SUPERVISOR_ANSWER_BYTES } from './limits.js';
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

/** Whether a path is the k3s supervisor's (`/v1-k3s/…`). Pure. */
export function isK3sSupervisorPath(path: string): boolean {
  return path.startsWith('/v1-k3s/');
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

/** What the supervisor part needs from the proxy. */
export interface K3sSupervisorParts {
  cache: DiskCache;
  upstream: UpstreamClient;
  state: UpstreamState;
  counters: RequestCounters;
  logger: Logger;
}

/** Answers `/v1-k3s/…` requests: forwarded and kept online, from what was kept offline. */
export class K3sSupervisorAnswers {
  constructor(private readonly parts: K3sSupervisorParts) {}

  /** Handles one request whose path {@link isK3sSupervisorPath} accepted. */
  async handle(
    req: IncomingMessage,
    res: ServerResponse,
    target: ApiPath,
    identityKey: string,
    clientCertCn: string | undefined,
  ): Promise<void> {
    // A query the key does not hold makes the request one that is only forwarded.
    const isStartPath =
      (req.method ?? 'GET') === 'GET' && target.query === '' && K3S_AGENT_START_PATHS.has(target.path);
    const key = isStartPath
      ? k3sStartKeyOf(this.parts.cache.installKey, identityKey, target.path, req.headers)
      : undefined;
    if (!this.parts.state.isOnline) {
      await this.#answerOffline(req, res, target.path, key);
      return;
    }
    let answer: { status: number; headers: IncomingMessage['headers']; body: Buffer } | undefined;
    try {
      answer = await this.#forward(req, target.target, clientCertCn, key !== undefined);
    } catch (error) {
      if (!isUnreachableError(error)) throw error;
      await this.#answerOffline(req, res, target.path, key);
      return;
    }
    if (answer === undefined) return void res.destroy();
    this.parts.counters.count('forwarded');
    if (key !== undefined && answer.status === 200) {
      await this.parts.cache.put({
        meta: {
          key,
          identityKey,
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

  async #answerOffline(req: IncomingMessage, res: ServerResponse, path: string, key: string | undefined) {
    req.resume();
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
