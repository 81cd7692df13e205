/**
 * The agent's side of a stream: the cluster's API server, reached with the
 * agent's own kubeconfig identity plus `Impersonate-User` / `-Group` for the
 * hub user, so that the edge cluster's RBAC decides what that user may do.
 *
 * Owns reading the upstream kubeconfig (server, CA, token or client
 * certificate) and forwarding plain and upgraded streams to that server.
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
import type { ClientRequest } from 'node:http';
import type { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { SecureContext } from 'node:tls';
import { pipeline } from 'node:stream';
import { ValidationError } from '../errors.js';
import { parseApiPath, type ApiPath } from '../kube/api-path.js';
import { readKubeconfigFile, type KubeCredentials } from '../kube/kubeconfig.js';
import type { Logger } from '../log/run-log.js';
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

/** Methods whose requests carry no body in practice, so they can be retried. */
const BODILESS_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Most sockets the agent keeps open to its API server at once. */
export const UPSTREAM_MAX_SOCKETS = 512;

/** Where the cluster's API server is and how the agent authenticates to it. Holds credentials. */
export interface UpstreamCredentials {
  /** `https://host:port`, without a path. */
  server: string;
  caPem?: string | undefined;
  isInsecureSkipTlsVerify: boolean;
  token?: string | undefined;
  clientCertPem?: string;
  clientKeyPem?: string;
}

/**
 * Reads the current context of a kubeconfig file into upstream credentials
 * (through edgeadm's one kubeconfig reader, `readKubeconfigFile`). Supports
 * CA and client certificate data or files, bearer tokens and token files;
 * exec and auth-provider plugins are refused.
 *
 * @throws {ValidationError} `E_UPSTREAM_KUBECONFIG`.
 */
export async function readUpstreamKubeconfig(path: string): Promise<UpstreamCredentials> {
  const invalid = (why: string): ValidationError =>
    new ValidationError(`the kubeconfig ${path} cannot be used: ${why}`, {
      code: 'E_UPSTREAM_KUBECONFIG',
      hints: [
        'Pass --kubeconfig with a kubeconfig whose current context reaches the cluster with a token or a client certificate.',
      ],
    });
  let read: KubeCredentials;
  try {
    read = await readKubeconfigFile(path);
  } catch (error) {
    throw invalid((error as Error).message);
  }
  let url: URL;
  try {
    url = new URL(read.server);
  } catch {
    throw invalid(`the server ${JSON.stringify(read.server)} is not a URL`);
  }
  if (url.protocol !== 'https:') throw invalid('the server is not https://');
  if (read.authPlugin !== undefined) {
    throw invalid('exec and auth-provider credentials are not supported; use a token or a client certificate');
  }
  const credentials: UpstreamCredentials = {
    server: url.origin,
    isInsecureSkipTlsVerify: read.isInsecureSkipTlsVerify === true,
  };
  if (read.caPem !== undefined) credentials.caPem = read.caPem;
  if (read.token !== undefined) credentials.token = read.token;
  if (read.clientCertificatePem !== undefined && read.clientKeyPem !== undefined) {
    credentials.clientCertPem = read.clientCertificatePem;
    credentials.clientKeyPem = read.clientKeyPem;
  }
  if (credentials.token === undefined && credentials.clientCertPem === undefined) {
    throw invalid('the current user has neither a token nor a client certificate');
  }
  return credentials;
}

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

/** Why a request whose answer did not start in time was ended (the agent's log; the user is told the code). */
const ANSWER_TIMEOUT_MESSAGE = 'the API server did not answer in time';

/** A timeout the agent itself enforces, with the errno code that {@link describeUpstreamFailure} names. */
function timeoutError(message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code: 'ETIMEDOUT' });
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
  /** Bodiless requests sent and not yet answered, with the time by which their answer must start. */
  readonly #awaitingAnswer = new Map<ClientRequest, number>();
  /** The sweep over {@link Upstream.#awaitingAnswer}; runs only while a request waits. */
  #answerSweep: NodeJS.Timeout | undefined;
  readonly #answerTimeoutMs: number;
  readonly #answerSweepMs: number;

  constructor(
    credentials: UpstreamCredentials,
    logger: Logger,
    timing: { answerTimeoutMs?: number; answerSweepMs?: number } = {},
  ) {
    this.credentials = credentials;
    this.#logger = logger;
    this.#origin = originOf(credentials.server);
    this.#answerTimeoutMs = timing.answerTimeoutMs ?? UPSTREAM_CONNECT_TIMEOUT_MS;
    this.#answerSweepMs = timing.answerSweepMs ?? UPSTREAM_ANSWER_SWEEP_MS;
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
    // One flat list, which node:http writes as it is: Host first (a list gets
    // none of its own), the user's headers by the one rule, then the agent's
    // credentials and the identity to impersonate.
    const outgoing = forwardableRequestHeaderList(headers, ['host', this.#origin.authority]);
    this.#pushIdentityHeaders(outgoing, identity);
    // A bodiless request may be sent again when a kept-alive socket turns
    // out to have been closed by the API server just as it was reused (the
    // race every keep-alive client has); a request with a body may not.
    const isRetryable = BODILESS_METHODS.has(method) && headers['content-length'] === undefined;
    const send = { stream, method, target: checked.value, outgoing, isRetryable, isRetry: false };
    // Once the client is set up, a request is sent in the same tick (no await per request).
    if (this.#agent !== undefined && this.#request !== undefined) this.#send(send, this.#agent, this.#request);
    else {
      const agent = await this.#httpsAgent();
      this.#request ??= (await import('node:https')).request;
      this.#send(send, agent, this.#request);
    }
  }

  #send(
    options: {
      stream: ServerHttp2Stream;
      method: string;
      target: ApiPath;
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
      path: options.target.target,
      method: options.method,
      agent,
      headers: options.outgoing,
    });
    // Until its answer starts, a request has a deadline; long-lived answers (watch, logs -f) have
    // none once they started. A bodiless request waits for the answer from the moment it is sent:
    // one sweep keeps those deadlines (a socket timer per request, set and cleared, was a visible
    // share of the agent's CPU). A request with a body keeps the socket's idle timer, so that a
    // slow upload that still moves is not cut off.
    if (options.isRetryable) this.#awaitAnswer(req);
    else {
      req.setTimeout(this.#answerTimeoutMs, () => req.destroy(timeoutError(ANSWER_TIMEOUT_MESSAGE)));
    }
    req.on('response', (res) => {
      if (options.isRetryable) this.#awaitingAnswer.delete(req);
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
      this.#logger.debug(`upstream request failed: ${error.message}`);
      this.#refuse(stream, 502, 'BadGateway', describeUpstreamFailure(error), UPSTREAM_UNREACHABLE_CODE);
    });
    let isAnswered = false;
    const onClose = (): void => {
      // The hub cancelled the stream before the answer was complete: stop asking the API server.
      if (!isAnswered && !req.destroyed) req.destroy();
    };
    stream.once('close', onClose);
    req.once('close', () => {
      stream.off('close', onClose);
      this.#awaitingAnswer.delete(req);
    });
    if (options.isRetryable) {
      stream.resume();
      req.end();
    } else pipeline(stream, req, () => {});
  }

  /** Gives a sent request its answer deadline, kept by the sweep. */
  #awaitAnswer(req: ClientRequest): void {
    this.#awaitingAnswer.set(req, Date.now() + this.#answerTimeoutMs);
    if (this.#answerSweep === undefined) {
      this.#answerSweep = setInterval(() => this.#expireAnswers(), this.#answerSweepMs);
      this.#answerSweep.unref();
    }
  }

  /** Ends every request whose answer has not started by its deadline; stops when none waits. */
  #expireAnswers(): void {
    const now = Date.now();
    for (const [req, deadline] of this.#awaitingAnswer) {
      if (deadline > now) continue;
      this.#awaitingAnswer.delete(req);
      req.destroy(timeoutError(ANSWER_TIMEOUT_MESSAGE));
    }
    if (this.#awaitingAnswer.size === 0) {
      clearInterval(this.#answerSweep);
      this.#answerSweep = undefined;
    }
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
      this.#logger.debug(`upstream upgrade failed: ${error.message}`);
      this.#refuse(stream, 502, 'BadGateway', describeUpstreamFailure(error), UPSTREAM_UNREACHABLE_CODE);
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

  /** Closes idle keep-alive sockets. */
  close(): void {
    clearInterval(this.#answerSweep);
    this.#answerSweep = undefined;
    this.#agent?.destroy();
  }
}
