/**
 * Token discovery: how a joining node comes to trust an API server it has
 * never seen, from a bootstrap token and a CA pin (kubeadm's flow, with
 * kubeadm's messages, so operators recognise them):
 *
 * 1. GET cluster-info without trusting TLS, retrying every
 *    {@link DISCOVERY_RETRY_INTERVAL_MS} until the timeout while the request
 *    fails or the token's signature is missing (signatures appear a little
 *    after a token is made).
 * 2. Verify the detached JWS with the token secret: the server knows the token.
 * 3. Verify the CA in it against the pins (or, only when asked, skip that).
 * 4. GET cluster-info again over TLS verified with that CA, and require the
 *    same kubeconfig: the server holds the pinned CA's certificate.
 *
 * The result is the TLS-bootstrap kubeconfig for the kubelet. Nothing is
 * written here; the caller writes it only once everything verified.
 *
 * An API server that refuses anonymous requests (HTTP 401 to step 1) is
 * discovered another way. k3s is such a server: it starts kube-apiserver
 * with `anonymous-auth=false` (k3s pkg/daemons/control/server.go,
 * `apiServer`), so kubeadm's anonymous GET of cluster-info cannot work
 * there. It does start it with `enable-bootstrap-token-auth=true`, and its
 * supervisor, on the same port, answers `GET /cacerts` before any
 * authentication with the bytes of its server CA file (k3s
 * pkg/server/handlers/router.go and handlers.go, `CACerts`); that is where
 * the k3s agent itself starts (pkg/clientaccess/token.go, `getCACerts`).
 * So, when anonymous is refused:
 *
 * 1. GET /cacerts without trusting TLS, with no credentials.
 * 2. Check the CA certificates in it against the pins. Nothing secret has
 *    been sent yet, so a wrong pin or a server in the middle learns nothing.
 * 3. GET cluster-info over TLS verified with that CA, with the bootstrap
 *    token as the bearer credential (a bootstrap token authenticates as
 *    `system:bootstrap:<id>` in `system:bootstrappers`, which edgeadm's
 *    cluster-info RoleBinding names beside `system:anonymous`). The token
 *    goes only to a server that proved it holds the pinned CA's key.
 * 4. Verify the JWS and the pin of the CA in cluster-info, as above.
 *
 * Without a pin (the unsafe flag) that path would hand the token to
 * whoever answered, so it is refused instead. The other ways were weighed
 * and dropped: anonymous access limited to cluster-info needs a structured
 * authentication configuration with anonymous conditions (beta only from
 * Kubernetes 1.32, and a k3s server given `authentication-config` stops
 * setting `anonymous-auth` at all), and sending the token on the first,
 * unverified request would give it to anyone in the middle.
 */
import type { X509Certificate } from 'node:crypto';
import type { Agent as HttpsAgent } from 'node:https';
import { isIP } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { EdgeadmError, ValidationError } from '../errors.js';
import { silentLogger, type Logger } from '../log/run-log.js';
import {
  assertBootstrapToken,
  formatBootstrapToken,
  parseBootstrapToken,
  type BootstrapToken,
} from './bootstrap-token.js';
import { caPinOf, checkCaPins, parseCaPins, type CaPin } from './ca-pin.js';
import {
  CLUSTER_INFO_KUBECONFIG_KEY,
  CLUSTER_INFO_NAME,
  CLUSTER_INFO_PATH,
  jwsSignatureKey,
  parseClusterInfoResponse,
  verifyClusterInfo,
} from './cluster-info.js';
import { formatGoDuration, parseGoDuration } from './duration.js';
import { readKubeconfigCluster, renderBootstrapKubeconfig } from './kubeconfig.js';
import { parsePemCertificates } from './pem.js';

/** How often discovery asks again: 5s, as kubeadm. */
export const DISCOVERY_RETRY_INTERVAL_MS = 5_000;
/** How long discovery keeps asking by default: 5m, as kubeadm's `--discovery-timeout`. */
export const DEFAULT_DISCOVERY_TIMEOUT_MS = 5 * 60_000;
/** The most one request may take (connect, TLS, answer). */
export const DISCOVERY_REQUEST_TIMEOUT_MS = 10_000;
/** The largest answer read: a ConfigMap cannot exceed 1 MiB, and the response wraps it. */
export const MAX_CLUSTER_INFO_RESPONSE_BYTES = 2 * 1024 * 1024;

/** Where to find the API server and what to trust it with, unparsed, and how to reach it. */
export interface DiscoveryOptions extends DiscoveryInput, DiscoveryIo {}

/** What discovery established. */
export interface DiscoveryResult {
  /** The endpoint discovery asked. */
  endpoint: string;
  /** The API server address cluster-info gives (may differ from the endpoint, e.g. behind a load balancer). */
  server: string;
  /** The CA bundle exactly as cluster-info holds it. */
  caPem: string;
  /**
   * The CA bundle byte for byte as the server served it at `/cacerts`,
   * when discovery went that way (a server that refuses anonymous
   * requests, as k3s): the bytes a k3s agent hashes to check its token.
   */
  servedCaBundle?: string;
  /** The pin of every certificate in the bundle. */
  caPins: string[];
  /** The pin that matched, when the CA was verified. */
  matchedPin?: string;
  /** False only with the unsafe flag and no pins. */
  isCaVerified: boolean;
  /** The verified cluster-info kubeconfig. */
  clusterInfoKubeconfig: string;
  /** The kubelet's TLS-bootstrap kubeconfig. Holds the token: a credential. */
  bootstrapKubeconfig: string;
}

/** An API server address, split: `host:port` parsed by {@link parseDiscoveryEndpoint}. */
export interface ApiServerEndpoint {
  host: string;
  port: number;
}

/** The address discovery works with; the module's old name for {@link ApiServerEndpoint}. */
type Target = ApiServerEndpoint;

/**
 * What discovery runs on, parsed once: the join request carries it and
 * discovery takes it as it is, without checking it again. Made by
 * {@link parseDiscoveryRequest}.
 */
export interface DiscoveryRequest {
  endpoint: ApiServerEndpoint;
  token: BootstrapToken;
  /** Canonical pins; empty only with {@link DiscoveryRequest.isUnsafeSkipCaVerification}. */
  caPins: CaPin[];
  isUnsafeSkipCaVerification: boolean;
  /** Positive. */
  timeoutMs: number;
}

/** How the TLS of a request is checked. */
type TlsTrust = { kind: 'insecure' } | { kind: 'pinned-ca'; caPem: string };

/** Where k3s's supervisor serves its CA bundle, unauthenticated. */
export const K3S_CA_CERTS_PATH = '/cacerts';

/** One GET: where, trusting what, and as whom (anonymous unless a bearer token is given). */
interface GetRequest {
  path: string;
  trust: TlsTrust;
  /** Sent only over TLS verified with a pinned CA. */
  bearerToken?: string;
}

/**
 * Node's codes for a server certificate that does not verify. On the second
 * fetch these are final, not transient: retrying cannot make a certificate
 * chain to the pinned CA, so discovery stops at once rather than waiting
 * out the timeout.
 */
const CERTIFICATE_REJECTED_CODES = new Set([
  'CERT_CHAIN_TOO_LONG',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'HOSTNAME_MISMATCH',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'PATH_LENGTH_EXCEEDED',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);

const HOST_NAME = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;
const MAX_PORT = 65_535;

/**
 * Parses `host:port`; the port is required, as kubeadm requires it.
 *
 * @throws {ValidationError} `E_DISCOVERY_ENDPOINT_INVALID`.
 */
export function parseDiscoveryEndpoint(endpoint: string): ApiServerEndpoint {
  const parsed = parseApiServerAddress(endpoint, { isPortRequired: true });
  return { host: parsed.host, port: parsed.port! };
}

/**
 * Parses an API server address: `host:port`, `[v6]:port`, or (unless the
 * port is required) a host alone. The one rule for join's endpoint and
 * init's `--control-plane-endpoint`.
 *
 * @throws {ValidationError} `E_DISCOVERY_ENDPOINT_INVALID`, whatever flag it came from.
 */
export function parseApiServerAddress(
  text: string,
  options: { isPortRequired: boolean; what?: string },
): { host: string; port?: number } {
  const what = options.what ?? 'API server endpoint';
  const invalid = (why: string): ValidationError =>
    new ValidationError(`invalid ${what} ${JSON.stringify(text)}: ${why}`, {
      code: 'E_DISCOVERY_ENDPOINT_INVALID',
      hints: [
        options.isPortRequired
          ? 'Pass the API server as host:port, for example 10.0.0.10:6443 or [fd00::10]:6443.'
          : 'Pass a host or host:port, for example cp.example.com, 10.0.0.10:6443 or [fd00::10]:6443.',
      ],
    });
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  const bare = options.isPortRequired || match ? undefined : /^(?:\[([^\]]+)\]|([^:[\]]+))$/.exec(text);
  const parts = match ?? bare;
  if (!parts) throw invalid(options.isPortRequired ? 'expected host:port' : 'expected host or host:port');
  const port = match ? Number(match[3]) : undefined;
  if (port !== undefined && (port < 1 || port > MAX_PORT)) throw invalid(`port ${port} is out of range`);
  if (parts[1] !== undefined) {
    if (isIP(parts[1]) !== 6) throw invalid('the part in brackets is not an IPv6 address');
    return { host: parts[1], ...(port === undefined ? {} : { port }) };
  }
  const host = parts[2] as string;
  if (isIP(host) === 0 && !HOST_NAME.test(host)) throw invalid('the host is neither an IP address nor a DNS name');
  return { host, ...(port === undefined ? {} : { port }) };
}

function endpointUrl(target: Target): string {
  return `https://${isIP(target.host) === 6 ? `[${target.host}]` : target.host}:${target.port}`;
}

/** Why one request failed. */
type FailureKind = 'certificate-rejected' | 'timed-out' | 'unauthorized' | 'other';

/** An error from one request, kept as the last error while polling. */
class RequestFailure extends Error {
  constructor(
    message: string,
    readonly kind: FailureKind,
  ) {
    super(message);
  }
}

/** Marks the error a request is destroyed with when it runs out of time. */
const REQUEST_TIMED_OUT = Symbol('request timed out');

/** The message of an API error Status body, if the body is one. */
function statusMessage(body: string): string | undefined {
  try {
    const status = JSON.parse(body) as { kind?: unknown; message?: unknown };
    return status.kind === 'Status' && typeof status.message === 'string' ? status.message : undefined;
  } catch {
    return undefined;
  }
}

/** One GET, on a fresh connection; resolves with the body of a 200 answer. */
async function getOnce(
  target: Target,
  get: GetRequest,
  timeoutMs: number,
  agent: HttpsAgent | undefined,
): Promise<string> {
  const { trust } = get;
  if (get.bearerToken !== undefined && trust.kind !== 'pinned-ca') {
    // Guards the rule above: a credential never travels on an unverified connection.
    throw new Error('a bearer token is only sent over TLS verified with the pinned CA');
  }
  // Loaded on use: node:http's parser cannot live in the single binary's
  // start-up snapshot, which evaluates every statically imported module.
  const { request } = await import('node:https');
  return new Promise((resolve, reject) => {
    const fail = (message: string, kind: FailureKind = 'other'): void => reject(new RequestFailure(message, kind));
    const req = request(
      {
        host: target.host,
        port: target.port,
        path: get.path,
        method: 'GET',
        headers: {
          Accept: 'application/json',
          'User-Agent': 'edgeadm-discovery',
          ...(get.bearerToken === undefined ? {} : { Authorization: `Bearer ${get.bearerToken}` }),
        },
        // A fresh connection each time: the second fetch must not ride on a
        // socket that was set up without verification (a proxy agent makes a fresh tunnel per request too).
        agent: agent ?? false,
        timeout: timeoutMs,
        ...(trust.kind === 'insecure' ? { rejectUnauthorized: false } : { rejectUnauthorized: true, ca: trust.caPem }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_CLUSTER_INFO_RESPONSE_BYTES) {
            req.destroy(new Error(`the response is larger than ${MAX_CLUSTER_INFO_RESPONSE_BYTES} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('error', (error) => fail(error.message));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status !== 200) {
            fail(
              statusMessage(body) ??
                `the server answered HTTP ${status}${res.statusMessage ? ` ${res.statusMessage}` : ''}`,
              status === 401 ? 'unauthorized' : 'other',
            );
            return;
          }
          resolve(body);
        });
      },
    );
    req.on('timeout', () =>
      req.destroy(
        Object.assign(new Error(`no answer within ${formatGoDuration(timeoutMs)}`), { [REQUEST_TIMED_OUT]: true }),
      ),
    );
    req.on('error', (error: NodeJS.ErrnoException) => {
      // Node suggests the system CA store for unknown issuers; discovery
      // trusts only the pinned CA, so that advice would mislead.
      const message = error.message.replace(/; if the root CA is installed locally.*$/s, '');
      if (REQUEST_TIMED_OUT in error) fail(message, 'timed-out');
      else if (trust.kind === 'pinned-ca' && CERTIFICATE_REJECTED_CODES.has(error.code ?? '')) {
        fail(message, 'certificate-rejected');
      } else fail(message);
    });
    req.end();
  });
}

/** One GET of cluster-info, parsed. */
async function getClusterInfoOnce(
  target: Target,
  get: GetRequest,
  timeoutMs: number,
  agent: HttpsAgent | undefined,
): Promise<Record<string, string>> {
  const body = await getOnce(target, get, timeoutMs, agent);
  try {
    return parseClusterInfoResponse(body);
  } catch (error) {
    throw new RequestFailure((error as Error).message, 'other');
  }
}

interface PollOptions {
  target: Target;
  get: GetRequest;
  tokenId: string;
  timeoutMs: number;
  intervalMs: number;
  logger: Logger;
  agent: HttpsAgent | undefined;
}

/** The server answered an anonymous request with 401: it does not take anonymous requests at all. */
class AnonymousRefused extends Error {}

/** Why the last attempt did not succeed, kept for the final error. */
interface LastError {
  code: string;
  message: string;
}

/**
 * Runs `attempt` until it returns a value or the timeout passes; then fails
 * with the last error, as kubeadm does. `attempt` returns a {@link LastError}
 * to ask again, or throws a {@link RequestFailure}.
 */
async function pollUntil<T>(
  options: PollOptions,
  what: string,
  attempt: (requestTimeoutMs: number) => Promise<{ value: T } | LastError>,
): Promise<T> {
  const { target, get, tokenId, timeoutMs, intervalMs, logger } = options;
  const deadline = Date.now() + timeoutMs;
  let attempts = 0;
  let last: LastError | undefined;
  for (;;) {
    attempts += 1;
    logger.debug(`[discovery] ${what}`);
    // The last request is cut short at the deadline, so that the timeout
    // holds even against a server that accepts connections and never answers.
    const requestTimeoutMs = Math.max(1, Math.min(DISCOVERY_REQUEST_TIMEOUT_MS, deadline - Date.now()));
    try {
      const outcome = await attempt(requestTimeoutMs);
      if ('value' in outcome) return outcome.value;
      last = outcome;
    } catch (error) {
      if (!(error instanceof RequestFailure)) throw error;
      const failure = error;
      if (failure.kind === 'certificate-rejected') {
        throw new EdgeadmError(
          `failed to request the cluster-info ConfigMap over TLS verified with the pinned cluster CA: ${failure.message}`,
          {
            code: 'E_DISCOVERY_TLS_UNTRUSTED',
            hints: [
              `The certificate that ${endpointUrl(target)} presented does not verify against the CA that cluster-info pinned. Something between this host and the API server may be intercepting TLS.`,
              'If the address is right but missing from the API server certificate, add it to the certificate SANs and retry.',
            ],
            details: { endpoint: endpointUrl(target), attempts },
          },
        );
      }
      if (failure.kind === 'unauthorized' && get.bearerToken === undefined && get.trust.kind === 'insecure') {
        // Final, not transient: an API server started without anonymous access never grants it later.
        throw new AnonymousRefused(failure.message);
      }
      // A request cut short by the deadline says nothing new about the
      // server: keep the error that came before it (a missing signature is
      // far more useful to the operator than "no answer within 12ms").
      const isCutShort = failure.kind === 'timed-out' && requestTimeoutMs < DISCOVERY_REQUEST_TIMEOUT_MS;
      if (!isCutShort || last === undefined) {
        last =
          failure.kind === 'unauthorized'
            ? // Only the token was refused: for the operator this is kubeadm's unknown token.
              {
                code: 'E_DISCOVERY_NO_JWS',
                message: `could not find a JWS signature in the cluster-info ConfigMap for token ID ${JSON.stringify(tokenId)}: the API server refused the token (${failure.message})`,
              }
            : {
                code: 'E_DISCOVERY_TIMEOUT',
                message: `failed to request ${describePath(get.path)}: ${failure.message}`,
              };
      }
    }
    // On the terminal (a warning), as kubeadm prints it: a wrong or expired token must not wait out the timeout in silence.
    logger.warn(`[discovery] Retrying due to error: ${last.message}`);
    const wait = Math.min(intervalMs, deadline - Date.now());
    if (wait <= 0) break;
    await sleep(wait);
    if (Date.now() >= deadline) break;
  }
  const hints = [
    `Discovery asked ${attempts} times over ${formatGoDuration(timeoutMs)}; raise --discovery-timeout to wait longer.`,
  ];
  if (last.code === 'E_DISCOVERY_NO_JWS') {
    hints.unshift(
      `The cluster does not know token ID "${tokenId}", or it has expired, or it may not sign: create a new token on the control plane ("edgeadm token create") and use the join command it prints.`,
    );
  } else {
    hints.unshift(`Check that ${endpointUrl(target)} is the API server and that this host can reach it.`);
  }
  throw new EdgeadmError(last.message, {
    code: last.code,
    hints,
    details: { endpoint: endpointUrl(target), tokenId, attempts, timeout: formatGoDuration(timeoutMs) },
  });
}

/** What a path is, in error messages (kubeadm's words for cluster-info). */
function describePath(path: string): string {
  return path === CLUSTER_INFO_PATH ? 'the cluster-info ConfigMap' : `${path}`;
}

/**
 * Asks for cluster-info until it comes back with the token's signature key,
 * or the timeout passes; then fails with the last error, as kubeadm does.
 *
 * @throws {AnonymousRefused} when an anonymous request gets 401.
 */
async function pollClusterInfo(options: PollOptions): Promise<Record<string, string>> {
  const { target, get, tokenId, agent } = options;
  return pollUntil<Record<string, string>>(
    options,
    `Waiting for the cluster-info ConfigMap to receive a JWS signature for token ID "${tokenId}"`,
    async (requestTimeoutMs) => {
      const data = await getClusterInfoOnce(target, get, requestTimeoutMs, agent);
      if (data[jwsSignatureKey(tokenId)] !== undefined) return { value: data };
      return {
        code: 'E_DISCOVERY_NO_JWS',
        message: `could not find a JWS signature in the cluster-info ConfigMap for token ID ${JSON.stringify(tokenId)}`,
      };
    },
  );
}

/** Asks for `/cacerts` (no credentials, no TLS verification) until it answers. */
async function pollCaCerts(options: PollOptions): Promise<string> {
  const { target, get, agent } = options;
  return pollUntil<string>(options, `Requesting the CA bundle at ${K3S_CA_CERTS_PATH}`, async (requestTimeoutMs) => ({
    value: await getOnce(target, get, requestTimeoutMs, agent),
  }));
}

/** Discovery's input as flags and config files give it: strings, before parsing. */
export interface DiscoveryInput {
  /** The API server, `host:port` (`[v6]:port` for IPv6), as kubeadm's join argument. */
  endpoint: string;
  /** The bootstrap token, `<id>.<secret>` or parsed. */
  token: string | BootstrapToken;
  /** `--discovery-token-ca-cert-hash` values; any one matching a CA certificate is enough. */
  caCertHashes: readonly string[];
  /** `--discovery-token-unsafe-skip-ca-verification`: accept the CA without a pin. */
  isUnsafeSkipCaVerification?: boolean;
  /** Give up after this long. Defaults to {@link DEFAULT_DISCOVERY_TIMEOUT_MS}. */
  timeoutMs?: number;
}

/**
 * Parses and checks discovery's input, with no I/O: the one place where a
 * token, the pins, the need for a pin, the timeout and the endpoint are
 * checked, in that order (the first mistake is the one reported).
 *
 * @throws {ValidationError} (exit 3) `E_TOKEN_INVALID`, `E_CA_PIN_INVALID`,
 * `E_DISCOVERY_NO_PIN`, `E_DISCOVERY_TIMEOUT_INVALID`,
 * `E_DISCOVERY_ENDPOINT_INVALID`.
 */
export function parseDiscoveryRequest(input: DiscoveryInput): DiscoveryRequest {
  const token = typeof input.token === 'string' ? parseBootstrapToken(input.token) : assertBootstrapToken(input.token);
  let caPins: CaPin[];
  try {
    caPins = parseCaPins(input.caCertHashes);
  } catch (error) {
    const cause = error as ValidationError;
    throw new ValidationError(`invalid discovery token CA certificate hash: ${cause.message}`, {
      code: cause.code,
      hints: cause.hints,
      cause,
    });
  }
  const isUnsafeSkipCaVerification = input.isUnsafeSkipCaVerification === true;
  if (caPins.length === 0 && !isUnsafeSkipCaVerification) {
    throw new ValidationError(
      'using token-based discovery without --discovery-token-ca-cert-hash can be unsafe: nothing would prove that the API server is the one you mean',
      {
        code: 'E_DISCOVERY_NO_PIN',
        hints: [
          'Pass --discovery-token-ca-cert-hash sha256:<hash>; print the hash on the control plane with "edgeadm certs ca-hash".',
          'Or, to trust whatever CA the server presents (only on a network you trust), pass --discovery-token-unsafe-skip-ca-verification.',
        ],
      },
    );
  }
  const timeoutMs = input.timeoutMs ?? DEFAULT_DISCOVERY_TIMEOUT_MS;
  if (!(timeoutMs > 0)) {
    throw new ValidationError('the discovery timeout must be positive', { code: 'E_DISCOVERY_TIMEOUT_INVALID' });
  }
  return {
    endpoint: parseDiscoveryEndpoint(input.endpoint),
    token,
    caPins,
    isUnsafeSkipCaVerification,
    timeoutMs,
  };
}

/**
 * Parses `--discovery-timeout` (a Go duration) into milliseconds.
 *
 * @throws {ValidationError} `E_DURATION_INVALID`, for a malformed or non-positive duration.
 */
export function parseDiscoveryTimeout(text: string, flag = '--discovery-timeout'): number {
  let ms: number;
  try {
    ms = parseGoDuration(text);
  } catch (error) {
    throw new ValidationError(`invalid ${flag}: ${(error as Error).message}`, {
      code: 'E_DURATION_INVALID',
      hints: (error as ValidationError).hints,
    });
  }
  if (ms <= 0) {
    throw new ValidationError(`invalid ${flag} ${JSON.stringify(text)}: it must be positive`, {
      code: 'E_DURATION_INVALID',
    });
  }
  return ms;
}

/** How discovery talks to the network, apart from what it is asked. */
export interface DiscoveryIo {
  /** Ask again after this long. Defaults to {@link DISCOVERY_RETRY_INTERVAL_MS}. */
  pollIntervalMs?: number;
  /** Progress goes here (never the token secret). */
  logger?: Logger;
  /** Connect through this agent (an HTTP proxy); a fresh direct connection per request otherwise. */
  agent?: HttpsAgent;
}

/**
 * Runs token discovery against `options.endpoint`.
 *
 * @throws {ValidationError} (exit 3) for bad options, before any request:
 * `E_TOKEN_INVALID`, `E_CA_PIN_INVALID`, `E_DISCOVERY_NO_PIN`,
 * `E_DISCOVERY_ENDPOINT_INVALID`.
 * @throws {EdgeadmError} (exit 1) when the server cannot be trusted or
 * reached: `E_DISCOVERY_NO_JWS`, `E_DISCOVERY_TIMEOUT`,
 * `E_DISCOVERY_JWS_INVALID`, `E_DISCOVERY_TOKEN_EXPIRED`,
 * `E_DISCOVERY_NO_KUBECONFIG`, `E_KUBECONFIG_INVALID`, `E_DISCOVERY_BAD_CA`,
 * `E_DISCOVERY_PIN_MISMATCH`, `E_DISCOVERY_TLS_UNTRUSTED`, `E_DISCOVERY_CHANGED`,
 * `E_DISCOVERY_ANONYMOUS_REFUSED` (the server refuses anonymous requests and
 * no pin was given, or it serves neither cluster-info nor `/cacerts` to them).
 */
export async function discoverClusterInfo(options: DiscoveryOptions): Promise<DiscoveryResult> {
  return discover(parseDiscoveryRequest(options), options);
}

/**
 * Runs token discovery for a parsed request: the request is taken as it
 * is (see {@link parseDiscoveryRequest}), so this reaches the network at once.
 *
 * @throws {EdgeadmError} as {@link discoverClusterInfo} after its checks.
 */
export async function discover(request: DiscoveryRequest, io: DiscoveryIo = {}): Promise<DiscoveryResult> {
  const logger = io.logger ?? silentLogger;
  const intervalMs = io.pollIntervalMs ?? DISCOVERY_RETRY_INTERVAL_MS;
  if (!(intervalMs > 0)) {
    throw new ValidationError('the discovery poll interval must be positive', { code: 'E_DISCOVERY_TIMEOUT_INVALID' });
  }
  const { endpoint: target, token, caPins: pins, timeoutMs } = request;
  const endpoint = endpointUrl(target);
  const pollOptions = (get: GetRequest): PollOptions => ({
    target,
    get,
    tokenId: token.id,
    timeoutMs,
    intervalMs,
    logger,
    agent: io.agent,
  });

  logger.info(`[discovery] Requesting cluster-info from ${JSON.stringify(endpoint)} without TLS verification`);
  let insecureData: Record<string, string>;
  try {
    insecureData = await pollClusterInfo(pollOptions({ path: CLUSTER_INFO_PATH, trust: { kind: 'insecure' } }));
  } catch (error) {
    if (!(error instanceof AnonymousRefused)) throw error;
    return discoverWithoutAnonymous({ endpoint, token, pins, logger, pollOptions, refusal: error.message });
  }
  const verified = verifiedClusterInfo(insecureData, token);
  const { kubeconfig, cluster, caPins } = verified;

  if (pins.length === 0) {
    logger.warn(
      `[discovery] Cluster info signature and contents are valid but no CA pin was given (--discovery-token-unsafe-skip-ca-verification): trusting CA ${caPins.join(', ')} of ${cluster.server} unverified`,
    );
    return discoveryResult({ endpoint, token, verified, isCaVerified: false });
  }

  const matchedPin = requirePinned(verified, pins, { endpoint, source: `${CLUSTER_INFO_NAME} ConfigMap` });
  logger.info(
    `[discovery] Requesting cluster-info from ${JSON.stringify(endpoint)} again to validate TLS against the pinned public key`,
  );
  const secureData = await pollClusterInfo(
    pollOptions({ path: CLUSTER_INFO_PATH, trust: { kind: 'pinned-ca', caPem: cluster.caPem } }),
  );
  if (secureData[CLUSTER_INFO_KUBECONFIG_KEY] !== kubeconfig) {
    throw new EdgeadmError(
      `the second kubeconfig from the ${CLUSTER_INFO_NAME} ConfigMap (using validated TLS) was different from the first`,
      {
        code: 'E_DISCOVERY_CHANGED',
        hints: [
          'cluster-info changed between the two requests, or the first answer did not come from the API server. Retry; if it persists, check the network path.',
        ],
        details: { endpoint },
      },
    );
  }
  logger.info(
    `[discovery] Cluster info signature and contents are valid and TLS certificate validates against pinned roots, will use API Server ${JSON.stringify(cluster.server)}`,
  );
  return discoveryResult({ endpoint, token, verified, isCaVerified: true, matchedPin });
}

/** cluster-info after its JWS verified: the kubeconfig, its cluster, and the pins of its CA. */
interface VerifiedClusterInfo {
  kubeconfig: string;
  cluster: { server: string; caPem: string };
  certificates: X509Certificate[];
  caPins: string[];
}

/** Verifies the JWS of cluster-info with the token and reads the cluster in it. */
function verifiedClusterInfo(data: Record<string, string>, token: BootstrapToken): VerifiedClusterInfo {
  const kubeconfig = verifyClusterInfo(data, token);
  const cluster = readKubeconfigCluster(kubeconfig, `the ${CLUSTER_INFO_NAME} ConfigMap`);
  const certificates = parseCa(cluster.caPem, `the ${CLUSTER_INFO_NAME} ConfigMap`);
  return { kubeconfig, cluster, certificates, caPins: certificates.map(caPinOf) };
}

/** The certificates of a CA bundle, or `E_DISCOVERY_BAD_CA`. */
function parseCa(caPem: string, source: string): X509Certificate[] {
  try {
    return parsePemCertificates(caPem, `the cluster CA of ${source}`).map(({ certificate }) => certificate);
  } catch (error) {
    throw new EdgeadmError(`failed to parse cluster CA from ${source}: ${(error as Error).message}`, {
      code: 'E_DISCOVERY_BAD_CA',
      cause: error,
    });
  }
}

/** The pin that matched, or `E_DISCOVERY_PIN_MISMATCH` with kubeadm's words. */
function requirePinned(
  ca: { certificates: readonly X509Certificate[] },
  pins: readonly string[],
  where: { endpoint: string; source: string },
): string {
  const check = checkCaPins(ca.certificates, pins);
  if (!check.isPinned) {
    throw new EdgeadmError(`cluster CA found in ${where.source} is invalid: ${check.message}`, {
      code: 'E_DISCOVERY_PIN_MISMATCH',
      hints: [
        'The CA this server presents is not the one the pin names: check the pin (run "edgeadm certs ca-hash" on the control plane) and the address.',
        'If the pin is right, this is not the cluster you meant, or something is intercepting the connection.',
      ],
      details: { endpoint: where.endpoint, expected: [...pins], actual: check.actual },
    });
  }
  return check.pin;
}

function discoveryResult(input: {
  endpoint: string;
  token: BootstrapToken;
  verified: VerifiedClusterInfo;
  isCaVerified: boolean;
  matchedPin?: string;
  servedCaBundle?: string;
}): DiscoveryResult {
  const { verified } = input;
  return {
    endpoint: input.endpoint,
    server: verified.cluster.server,
    caPem: verified.cluster.caPem,
    ...(input.servedCaBundle === undefined ? {} : { servedCaBundle: input.servedCaBundle }),
    caPins: verified.caPins,
    isCaVerified: input.isCaVerified,
    ...(input.matchedPin === undefined ? {} : { matchedPin: input.matchedPin }),
    clusterInfoKubeconfig: verified.kubeconfig,
    bootstrapKubeconfig: renderBootstrapKubeconfig({
      server: verified.cluster.server,
      caPem: verified.cluster.caPem,
      token: formatBootstrapToken(input.token),
    }),
  };
}

/**
 * Discovery against an API server that refuses anonymous requests (k3s):
 * the CA from `/cacerts` checked against the pins first, then cluster-info
 * over TLS verified with it, authenticated with the bootstrap token. See
 * the module header for why.
 */
async function discoverWithoutAnonymous(input: {
  endpoint: string;
  token: BootstrapToken;
  pins: readonly string[];
  logger: Logger;
  pollOptions: (get: GetRequest) => PollOptions;
  refusal: string;
}): Promise<DiscoveryResult> {
  const { endpoint, token, pins, logger, pollOptions } = input;
  if (pins.length === 0) {
    throw new EdgeadmError(
      `the API server refuses anonymous requests (${input.refusal}), and without a CA pin discovery would have to send the token to a server nothing verified`,
      {
        code: 'E_DISCOVERY_ANONYMOUS_REFUSED',
        hints: [
          'This server (k3s, or kube-apiserver with --anonymous-auth=false) reads cluster-info only for the token, and the token is sent only over TLS verified with a pinned CA.',
          'Pass --discovery-token-ca-cert-hash sha256:<hash>; print the hash on the control plane with "edgeadm certs ca-hash".',
        ],
        details: { endpoint },
      },
    );
  }
  logger.info(
    `[discovery] ${JSON.stringify(endpoint)} refuses anonymous requests; requesting its CA bundle from ${K3S_CA_CERTS_PATH} without TLS verification`,
  );
  let servedCaBundle: string;
  try {
    servedCaBundle = await pollCaCerts(pollOptions({ path: K3S_CA_CERTS_PATH, trust: { kind: 'insecure' } }));
  } catch (error) {
    if (!(error instanceof AnonymousRefused)) throw error;
    throw new EdgeadmError(
      `the API server refuses anonymous requests for cluster-info and for ${K3S_CA_CERTS_PATH} (${error.message})`,
      {
        code: 'E_DISCOVERY_ANONYMOUS_REFUSED',
        hints: [
          `Neither kubeadm's anonymous cluster-info nor k3s's ${K3S_CA_CERTS_PATH} is open on ${endpoint}: check that it is the cluster's API server.`,
        ],
        details: { endpoint },
      },
    );
  }
  const source = `the CA bundle served at ${K3S_CA_CERTS_PATH}`;
  requirePinned({ certificates: parseCa(servedCaBundle, source) }, pins, { endpoint, source });
  logger.info(
    `[discovery] Requesting cluster-info from ${JSON.stringify(endpoint)} over TLS verified with the pinned CA, with the bootstrap token`,
  );
  const data = await pollClusterInfo(
    pollOptions({
      path: CLUSTER_INFO_PATH,
      trust: { kind: 'pinned-ca', caPem: servedCaBundle },
      bearerToken: formatBootstrapToken(token),
    }),
  );
  const verified = verifiedClusterInfo(data, token);
  const matchedPin = requirePinned(verified, pins, { endpoint, source: `${CLUSTER_INFO_NAME} ConfigMap` });
  logger.info(
    `[discovery] Cluster info signature and contents are valid and TLS certificate validates against pinned roots, will use API Server ${JSON.stringify(verified.cluster.server)}`,
  );
  return discoveryResult({ endpoint, token, verified, isCaVerified: true, matchedPin, servedCaBundle });
}
