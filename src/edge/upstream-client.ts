/**
 * Connections to the upstream API server: one HTTPS agent per upstream
 * identity (bearer-token and anonymous clients share a CA-only agent; each
 * `--client-cert-map` CN has an agent presenting its certificate), a
 * connect budget, the classification of errors that mean "unreachable",
 * and the `/readyz` probe (made with the proxy's own kubeconfig identity,
 * the only thing that identity is used for).
 *
 * `node:https` is loaded when the client is created, never at import: the
 * single binary's startup snapshot cannot hold sockets or agents.
 */
import type { Agent, AgentOptions, RequestOptions } from 'node:https';
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { silentLogger, type Logger } from '../log/run-log.js';
import { CLIENT_CERT_RELOAD_CHECK_MS, HEALTH_PROBE_TIMEOUT_MS, UPSTREAM_CONNECT_TIMEOUT_MS } from './limits.js';
import { ClientCertAgents } from './client-cert-agents.js';
import type { UpstreamClientCertificate, UpstreamConfig } from './upstream-config.js';

/** Socket error codes that mean the upstream cannot be reached (the proxy then serves from its cache). */
export const UNREACHABLE_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
]);

/** Whether an error from a request to the upstream means it is unreachable (not that it answered badly). */
export function isUnreachableError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && UNREACHABLE_ERROR_CODES.has(code)) return true;
  // A socket that hangs up before any answer ("socket hang up") carries ECONNRESET; an aborted answer says "aborted".
  return error instanceof Error && /socket hang up|aborted/i.test(error.message);
}

/**
 * TLS error codes that mean the upstream answered, but its certificate does
 * not verify against the CA in the proxy's upstream kubeconfig: the
 * server's CA changed (a rotation the node has not followed), or another
 * server answers at that address. Told apart from an outage (issue #40):
 * waiting does not bring such a server back.
 */
export const CERTIFICATE_REJECTED_ERROR_CODES: ReadonlySet<string> = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_SIGNATURE_FAILURE',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Whether an error from a request to the upstream means its certificate did not verify (see {@link CERTIFICATE_REJECTED_ERROR_CODES}). */
export function isCertificateRejectedError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CERTIFICATE_REJECTED_ERROR_CODES.has(code);
}

/** What one readiness probe found: an answer below 500, no answer, or a server whose certificate does not verify. */
export type ProbeOutcome = 'online' | 'unreachable' | 'certificate-rejected';

/** One readiness probe's result. */
export interface ProbeResult {
  outcome: ProbeOutcome;
  /** Why, for the log: the status or the error. */
  reason: string;
}

/** Makes an error that {@link isUnreachableError} recognises, for timeouts the proxy enforces itself. */
export function timeoutError(what: string): Error {
  return Object.assign(new Error(`${what} timed out`), { code: 'ETIMEDOUT' });
}

/** Options of one upstream request. */
export interface UpstreamRequestOptions {
  method: string;
  /** Path and query, as the client sent them. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The `--client-cert-map` CN whose certificate to present, or none. */
  clientCertCn?: string | undefined;
}

/** Requests to the upstream API server. Create with {@link createUpstreamClient}. */
export interface UpstreamClient {
  readonly server: URL;
  /** Starts a request (the caller writes the body and ends it); connect time is bounded. */
  request(options: UpstreamRequestOptions): ClientRequest;
  /** One `/readyz` probe: online when the upstream answers below 500. */
  probe(): Promise<ProbeResult>;
  /** Closes idle connections. */
  close(): void;
}

/** Creates the agents for the upstream and the mapped client certificates. */
export async function createUpstreamClient(options: {
  upstream: UpstreamConfig;
  clientCerts: ReadonlyMap<string, UpstreamClientCertificate>;
  /** How often mapped certificate files are checked for rotation. Defaults to {@link CLIENT_CERT_RELOAD_CHECK_MS}. */
  certReloadCheckMs?: number | undefined;
  logger?: Logger;
}): Promise<UpstreamClient> {
  const https = await import('node:https');
  const logger = options.logger ?? silentLogger;
  const reloadCheckMs = options.certReloadCheckMs ?? CLIENT_CERT_RELOAD_CHECK_MS;
  const { server, caPem, credentials } = options.upstream;
  const base: AgentOptions = { ca: caPem, keepAlive: true };
  const shared = new https.Agent(base);
  const perCn = new ClientCertAgents(
    options.clientCerts,
    (tls) => new https.Agent({ ...base, ...tls }),
    reloadCheckMs,
    logger,
  );
  const probeAgent = new https.Agent({
    ca: caPem,
    keepAlive: false,
    ...(credentials.certPem && credentials.keyPem ? { cert: credentials.certPem, key: credentials.keyPem } : {}),
  });
  const prefix = server.pathname.replace(/\/+$/, '');

  const start = (requestOptions: RequestOptions, agent: Agent): ClientRequest => {
    const request = https.request({
      protocol: 'https:',
      hostname: server.hostname.replace(/^\[|\]$/g, ''),
      port: server.port || 443,
      agent,
      ...requestOptions,
    });
    request.on('socket', (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(
        () => request.destroy(timeoutError('connecting to the API server')),
        UPSTREAM_CONNECT_TIMEOUT_MS,
      );
      socket.once('connect', () => clearTimeout(timer));
      socket.once('close', () => clearTimeout(timer));
    });
    return request;
  };

  return {
    server,
    request(requestOptions) {
      const agent = requestOptions.clientCertCn === undefined ? shared : perCn.agentFor(requestOptions.clientCertCn);
      if (!agent) throw new Error(`no upstream certificate for CN ${requestOptions.clientCertCn}`);
      return start(
        {
          method: requestOptions.method,
          path: `${prefix}${requestOptions.path}`,
          headers: { ...requestOptions.headers, host: server.host },
        },
        agent,
      );
    },
    probe() {
      return new Promise<ProbeResult>((resolve) => {
        const headers: Record<string, string> = { accept: 'text/plain', host: server.host };
        if (credentials.token) headers['authorization'] = `Bearer ${credentials.token}`;
        const request = start({ method: 'GET', path: `${prefix}/readyz`, headers }, probeAgent);
        const timer = setTimeout(() => request.destroy(timeoutError('the readiness probe')), HEALTH_PROBE_TIMEOUT_MS);
        request.on('response', (response: IncomingMessage) => {
          clearTimeout(timer);
          response.resume();
          const status = response.statusCode ?? 500;
          resolve({ outcome: status < 500 ? 'online' : 'unreachable', reason: `/readyz answered ${status}` });
        });
        request.on('error', (error) => {
          clearTimeout(timer);
          resolve({
            outcome: isCertificateRejectedError(error) ? 'certificate-rejected' : 'unreachable',
            reason: error.message,
          });
        });
        request.end();
      });
    },
    close() {
      shared.destroy();
      probeAgent.destroy();
      perCn.destroy();
    },
  };
}
