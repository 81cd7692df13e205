/**
 * The agent's side of a stream: the cluster's API server, reached with the
 * agent's own kubeconfig identity plus `Impersonate-User` / `-Group` for the
 * hub user, so that the edge cluster's RBAC decides what that user may do.
 *
 * Owns reading the upstream kubeconfig (server, CA, token or client
 * certificate) and forwarding plain and upgraded streams to that server:
 * plain requests over HTTP/2 when the API server picks it by ALPN
 * (upstream-h2.ts), else over an HTTPS/1.1 keep-alive pool; upgrades always
 * over a fresh HTTP/1.1 connection.
 *
 * The agent's credentials go to one place only: every request it sends is
 * addressed to the API server's host and port from the kubeconfig, with the
 * request target as the `path` option, never resolved as a URL against the
 * server (which is how `//HOST:PORT/…` once took the agent's token to
 * HOST). The target must pass `parseApiPath`, here again after the hub, so
 * that a hub bug cannot send the token elsewhere either. Failures reaching
 * the API server are answered with the error's code, not its message, which
 * names addresses and ports of the edge network.
 */
import type { ServerHttp2Stream, IncomingHttpHeaders as Http2Headers } from 'node:http2';
import type { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { SecureContext } from 'node:tls';
import { pipeline } from 'node:stream';
import { parseApiPath, type ApiPath } from '../kube/api-path.js';
import type { Logger } from '../log/run-log.js';
import type { UpstreamCredentials } from './upstream-kubeconfig.js';
import { ANSWER_TIMEOUT_MESSAGE, AnswerDeadlines, timeoutError } from './answer-deadlines.js';
import { forwardBody } from './forward-body.js';
import { UPGRADE_FLUSH_GRACE_MS, UPSTREAM_ANSWER_SWEEP_MS, UPSTREAM_CONNECT_TIMEOUT_MS } from './limits.js';
import { closeAfterFlush, relayBothWays } from './relay.js';
import {
  decodeUpgradeRequest,
  forwardableRequestHeaderList,
  forwardableResponseHeaders,
  readIdentity,
  type GroupsCache,
  renderUpgradeRequestHead,
  REQUEST_HEADER,
  type StreamIdentity,
} from './protocol.js';
import { forwardOverH2, type H2Context, type H2Request, type PooledSession, UpstreamH2Pool } from './upstream-h2.js';

/** Entries of the HTTP/2 request line at the head of a header list: `:method`, `:path`, `:authority`, `:scheme` and their values. */
const H2_REQUEST_LINE_ENTRIES = 8;
/** Methods whose requests carry no body in practice, so they can be retried. */
const BODILESS_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Most sockets the agent keeps open to its API server at once. */
export const UPSTREAM_MAX_SOCKETS = 512;

export { readUpstreamKubeconfig, type UpstreamCredentials } from './upstream-kubeconfig.js';

/** The stable code of a path the agent refuses to forward. */
export const BAD_UPSTREAM_PATH_CODE = 'E_AGENT_PROXY_PATH';
/** The stable code of an API server the agent cannot reach. */
export const UPSTREAM_UNREACHABLE_CODE = 'E_AGENT_UPSTREAM';

/**
 * A Kubernetes Status body for errors the agent answers itself; edgeadm's
 * stable code, when given, is the reason of its one cause.
 */
export function statusBody(code: number, reason: string, message: string, edgeadmCode?: string): string {
  return JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(edgeadmCode === undefined ? {} : { details: { causes: [{ reason: edgeadmCode, message }] } }),
    code,
  });
}

/** Words for the errno and TLS codes of a failed connection, for the user's answer. */
const FAILURE_WORDS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'name not found',
  EAI_AGAIN: 'name lookup failed',
  EPIPE: 'connection closed',
};

/**
 * What the user is told when the agent cannot reach its API server: the
 * error's code (errno or TLS verification code, constants that name no
 * place) and words for it, never its message, which carries the API
 * server's address and port. The agent's own log keeps the full message.
 */
export function describeUpstreamFailure(error: NodeJS.ErrnoException): string {
  const code = typeof error.code === 'string' && /^[A-Z][A-Z0-9_]*$/.test(error.code) ? error.code : undefined;
  if (code === undefined) return 'the edge agent cannot reach its API server';
  const words =
    FAILURE_WORDS[code] ?? (/CERT|TLS|SSL|SIGNATURE|ISSUER/.test(code) ? 'TLS verification failed' : undefined);
  return `the edge agent cannot reach its API server (${code}${words === undefined ? '' : `: ${words}`})`;
}

/** The API server's origin, taken apart once: where every request goes. */
interface UpstreamOrigin {
  /** Host name or address, without IPv6 brackets. */
  host: string;
  port: number;
  /** `host:port` as written in the server URL, for the Host header of upgrades. */
  authority: string;
  /** TLS server name; undefined for an address. */
  servername: string | undefined;
}

function originOf(server: string): UpstreamOrigin {
  const url = new URL(server);
  return {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: Number(url.port || 443),
    authority: url.host,
    servername: /^[\d.:[\]]+$/.test(url.hostname) ? undefined : url.hostname,
  };
}

/**
 * Checks a request target against the one rule before the agent's
 * credentials go anywhere with it.
 */
function checkTarget(path: string): { ok: true; value: ApiPath } | { ok: false; message: string } {
  const checked = parseApiPath(path);
  return checked.ok ? checked : { ok: false, message: `the edge agent forwards API paths only: ${checked.message}` };
}

/** Forwards streams to one API server. */
export class Upstream {
  readonly credentials: UpstreamCredentials;
  readonly #logger: Logger;
  readonly #origin: UpstreamOrigin;
  #agent: HttpsAgent | undefined;
  #request: typeof httpsRequest | undefined;
  #secureContext: SecureContext | undefined;
  /** Group lists already read from the hub's identity headers (protocol.ts). */
  readonly #groupsCache: GroupsCache = new Map();
  /** Bodiless requests sent and not yet answered, each with the time by which its answer must start. */
  readonly #deadlines: AnswerDeadlines;
  readonly #answerTimeoutMs: number;
  /** HTTP/2 sessions to the API server, when it speaks HTTP/2. */
  readonly #h2: UpstreamH2Pool;
  readonly #h2Context: H2Context;

  constructor(
    credentials: UpstreamCredentials,
    logger: Logger,
    timing: { answerTimeoutMs?: number; answerSweepMs?: number } = {},
  ) {
    this.credentials = credentials;
    this.#logger = logger;
    this.#origin = originOf(credentials.server);
    this.#answerTimeoutMs = timing.answerTimeoutMs ?? UPSTREAM_CONNECT_TIMEOUT_MS;
    this.#deadlines = new AnswerDeadlines({
      timeoutMs: this.#answerTimeoutMs,
      sweepMs: timing.answerSweepMs ?? UPSTREAM_ANSWER_SWEEP_MS,
    });
    this.#h2 = new UpstreamH2Pool({ origin: this.#origin, tls: () => this.#tlsOptions(), logger });
    this.#h2Context = {
      pool: this.#h2,
      deadlines: this.#deadlines,
      answerTimeoutMs: this.#answerTimeoutMs,
      logger,
      refuse: (stream, error) => this.#refuseUnreachable(stream, error),
      resend: (request, minSerial) => void this.#resendH2(request, minSerial),
    };
  }

  /** Sessions open to the API server over HTTP/2 now. */
  get h2SessionCount(): number {
    return this.#h2.sessionCount;
  }

  /**
   * TLS options for every connection to the API server: the CA and client
   * certificate in one secure context, made once. Given as PEM instead, they
   * were parsed again for every new connection (each upgrade, and each
   * keep-alive socket the API server had closed), a share of the agent's CPU
   * in its profile.
   */
  async #tlsOptions(): Promise<{ rejectUnauthorized: boolean; secureContext: SecureContext }> {
    const c = this.credentials;
    if (this.#secureContext === undefined) {
      const { createSecureContext } = await import('node:tls');
      this.#secureContext = createSecureContext({
        ...(c.caPem === undefined ? {} : { ca: c.caPem }),
        ...(c.clientCertPem === undefined ? {} : { cert: c.clientCertPem, key: c.clientKeyPem }),
      });
    }
    return { rejectUnauthorized: !c.isInsecureSkipTlsVerify, secureContext: this.#secureContext };
  }

  async #httpsAgent(): Promise<HttpsAgent> {
    if (this.#agent === undefined) {
      const { Agent } = await import('node:https');
      const tls = await this.#tlsOptions();
      this.#agent ??= new Agent({ keepAlive: true, maxSockets: UPSTREAM_MAX_SOCKETS, ...tls });
    }
    return this.#agent;
  }

  #authorization(): string | undefined {
    return this.credentials.token === undefined ? undefined : `Bearer ${this.credentials.token}`;
  }

  /** GETs a path as the agent itself (for the hello: version and node count). */
  async getJson(path: string): Promise<unknown> {
    return this.requestJson('GET', path);
  }

  /**
   * One JSON request as the agent itself (no impersonation): the hello, and
   * the access reviews that check the agent's own RBAC. Any status but 2xx
   * is an error that names it.
   */
  async requestJson(method: string, path: string, body?: unknown): Promise<unknown> {
    const checked = checkTarget(path);
    if (!checked.ok) throw new Error(checked.message);
    const { request } = await import('node:https');
    const agent = await this.#httpsAgent();
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolvePromise, reject) => {
      const auth = this.#authorization();
      const req = request(
        {
          host: this.#origin.host,
          port: this.#origin.port,
          path: checked.value.target,
          method,
          agent,
          headers: {
            Accept: 'application/json',
            ...(auth ? { Authorization: auth } : {}),
            ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': String(payload.length) } : {}),
          },
          timeout: UPSTREAM_CONNECT_TIMEOUT_MS,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            if (status < 200 || status >= 300) {
              reject(new Error(`${method} ${path} answered HTTP ${status}`));
              return;
            }
            try {
              resolvePromise(JSON.parse(Buffer.concat(chunks).toString('utf8')));
            } catch (error) {
              reject(error);
            }
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Forwards one plain request stream and pipes the answer back. */
  async forwardRequest(stream: ServerHttp2Stream, headers: Http2Headers): Promise<void> {
    const identity = readIdentity(headers, this.#groupsCache);
    if (identity === undefined) {
      this.#refuse(stream, 400, 'BadRequest', 'the tunnel stream carries no identity to impersonate');
      return;
    }
    const checked = checkTarget(String(headers[':path'] ?? ''));
    if (!checked.ok) {
      this.#refuse(stream, 400, 'BadRequest', checked.message, BAD_UPSTREAM_PATH_CODE);
      return;
    }
    const method = String(headers[':method'] ?? 'GET');
    // One flat list, which node:http2 and node:http write as it is: the
    // request line (HTTP/2's pseudo-headers; over HTTP/1.1 only Host, as a
    // list gets none of its own), the user's headers by the one rule, then
    // the agent's credentials and the identity to impersonate.
    const target = checked.value.target;
    const authority = this.#origin.authority;
    const outgoing = forwardableRequestHeaderList(
      headers,
      this.#h2.isHttp1Only
        ? ['host', authority]
        : [':method', method, ':path', target, ':authority', authority, ':scheme', 'https'],
    );
    this.#pushIdentityHeaders(outgoing, identity);
    // A bodiless request may be sent again when a kept-alive connection turns
    // out to have been closed by the API server just as it was reused (the
    // race every keep-alive client has; over HTTP/2 also a refused stream or
    // a GOAWAY); a request with a body may not.
    const isRetryable = BODILESS_METHODS.has(method) && headers['content-length'] === undefined;
    const request: H2Request = { stream, headers: outgoing, isRetryable, isRetry: false };
    // Once a session is open, a request is sent in the same tick (no await per request).
    const entry = this.#h2.pick();
    if (entry !== undefined) {
      forwardOverH2(entry, request, this.#h2Context);
      return;
    }
    let acquired: PooledSession | undefined;
    try {
      acquired = this.#h2.isHttp1Only ? undefined : await this.#h2.acquire();
    } catch (error) {
      this.#refuseUnreachable(stream, error as NodeJS.ErrnoException);
      return;
    }
    if (acquired === undefined) await this.#sendHttp1(request, method, target);
    else forwardOverH2(acquired, request, this.#h2Context);
  }

  /** Sends a request once more after its HTTP/2 stream was refused unanswered: on a fresh session, else over HTTP/1.1. */
  async #resendH2(request: H2Request, minSerial: number): Promise<void> {
    let entry: PooledSession | undefined;
    try {
      entry = await this.#h2.acquire(minSerial);
    } catch (error) {
      this.#refuseUnreachable(request.stream, error as NodeJS.ErrnoException);
      return;
    }
    if (entry === undefined) {
      const [, method, , target] = request.headers as [string, string, string, string];
      await this.#sendHttp1(request, method, target);
    } else forwardOverH2(entry, request, this.#h2Context);
  }

  /** A request over the HTTPS/1.1 keep-alive pool (an API server without HTTP/2, or every session full). */
  async #sendHttp1(request: H2Request, method: string, target: string): Promise<void> {
    const outgoing =
      request.headers[0] === ':method'
        ? ['host', this.#origin.authority, ...request.headers.slice(H2_REQUEST_LINE_ENTRIES)]
        : request.headers;
    const { stream, isRetryable, isRetry } = request;
    const options = { stream, method, target, outgoing, isRetryable, isRetry };
    // Once the client is set up, a request is sent in the same tick (no await per request).
    if (this.#agent !== undefined && this.#request !== undefined) this.#send(options, this.#agent, this.#request);
    else {
      const agent = await this.#httpsAgent();
      this.#request ??= (await import('node:https')).request;
      this.#send(options, agent, this.#request);
    }
  }

  #send(
    options: {
      stream: ServerHttp2Stream;
      method: string;
      /** Checked by `checkTarget`. */
      target: string;
      outgoing: string[];
      isRetryable: boolean;
      isRetry: boolean;
    },
    agent: HttpsAgent,
    request: typeof httpsRequest,
  ): void {
    const { stream } = options;
    const req = request({
      host: this.#origin.host,
      port: this.#origin.port,
      path: options.target,
      method: options.method,
      agent,
      headers: options.outgoing,
    });
    // Until its answer starts, a request has a deadline; long-lived answers (watch, logs -f) have
    // none once they started. A bodiless request waits for the answer from the moment it is sent:
    // one sweep keeps those deadlines (a socket timer per request, set and cleared, was a visible
    // share of the agent's CPU). A request with a body keeps the socket's idle timer, so that a
    // slow upload that still moves is not cut off.
    if (options.isRetryable) this.#deadlines.await(req);
    else {
      req.setTimeout(this.#answerTimeoutMs, () => req.destroy(timeoutError(ANSWER_TIMEOUT_MESSAGE)));
    }
    req.on('response', (res) => {
      if (options.isRetryable) this.#deadlines.answered(req);
      else req.setTimeout(0);
      if (stream.destroyed) {
        res.destroy();
        return;
      }
      const answer = forwardableResponseHeaders(res.headers);
      answer[':status'] = String(res.statusCode ?? 502);
      stream.respond(answer);
      // Not pipeline, nor pipe, on this per-request path: see forward-body.ts.
      res.on('error', () => stream.destroy());
      res.once('end', () => (isAnswered = true));
      forwardBody(res, stream, { isEndAfterWrites: true });
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (options.isRetryable && !options.isRetry && req.reusedSocket && error.code === 'ECONNRESET') {
        this.#send({ ...options, isRetry: true }, agent, request);
        return;
      }
      this.#refuseUnreachable(stream, error);
    });
    let isAnswered = false;
    const onClose = (): void => {
      // The hub cancelled the stream before the answer was complete: stop asking the API server.
      if (!isAnswered && !req.destroyed) req.destroy();
    };
    stream.once('close', onClose);
    req.once('close', () => {
      stream.off('close', onClose);
      this.#deadlines.answered(req);
    });
    if (options.isRetryable) {
      stream.resume();
      req.end();
    } else pipeline(stream, req, () => {});
  }

  /** Forwards one upgrade stream: a fresh TLS connection to the API server, then raw bytes both ways. */
  async forwardUpgrade(stream: ServerHttp2Stream, headers: Http2Headers): Promise<void> {
    const identity = readIdentity(headers, this.#groupsCache);
    const upgrade = decodeUpgradeRequest(headers[REQUEST_HEADER]);
    if (identity === undefined || upgrade === undefined) {
      this.#refuse(stream, 400, 'BadRequest', 'the tunnel upgrade stream is malformed');
      return;
    }
    const checked = checkTarget(upgrade.path);
    if (!checked.ok) {
      this.#refuse(stream, 400, 'BadRequest', checked.message, BAD_UPSTREAM_PATH_CODE);
      return;
    }
    const origin = this.#origin;
    // Rendered before dialling: the head carries the agent's credentials, and rendering checks the path again.
    const head = renderUpgradeRequestHead({
      request: { ...upgrade, path: checked.value.target },
      host: origin.authority,
      authorization: this.#authorization(),
      identity,
    });
    const { connect } = await import('node:tls');
    const socket = connect({
      host: origin.host,
      port: origin.port,
      servername: origin.servername,
      ALPNProtocols: ['http/1.1'],
      ...(await this.#tlsOptions()),
    });
    const timer = setTimeout(
      () => socket.destroy(timeoutError('connecting to the API server timed out')),
      UPSTREAM_CONNECT_TIMEOUT_MS,
    );
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      if (stream.destroyed) {
        socket.destroy();
        return;
      }
      socket.write(head);
      stream.respond({ ':status': 200 });
      relayBothWays(stream, socket);
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      this.#refuseUnreachable(stream, error);
    });
    // The hub's end: what the API server still has to be sent goes first (stdin's last bytes).
    stream.on('close', () => closeAfterFlush(socket, UPGRADE_FLUSH_GRACE_MS));
  }

  /** Appends the agent's credentials and the impersonation headers for `identity` to a flat header list. */
  #pushIdentityHeaders(list: string[], identity: StreamIdentity): void {
    const auth = this.#authorization();
    if (auth !== undefined) list.push('authorization', auth);
    list.push('impersonate-user', identity.user);
    for (const group of identity.groups) list.push('impersonate-group', group);
  }

  /** The refusal for an API server the agent cannot reach (or that did not answer in time). */
  #refuseUnreachable(stream: ServerHttp2Stream, error: NodeJS.ErrnoException): void {
    this.#logger.debug(`upstream request failed: ${error.message}`);
    this.#refuse(stream, 502, 'BadGateway', describeUpstreamFailure(error), UPSTREAM_UNREACHABLE_CODE);
  }

  #refuse(stream: ServerHttp2Stream, code: number, reason: string, message: string, edgeadmCode?: string): void {
    if (stream.destroyed) return;
    if (stream.headersSent) {
      stream.close();
      return;
    }
    // A refused request's body is read and dropped, so the stream can end.
    stream.resume();
    stream.respond({ ':status': code, 'content-type': 'application/json' });
    stream.end(statusBody(code, reason, message, edgeadmCode));
  }

  /** Closes idle keep-alive sockets and every HTTP/2 session. */
  close(): void {
    this.#deadlines.close();
    this.#h2.close();
    this.#agent?.destroy();
  }
}
