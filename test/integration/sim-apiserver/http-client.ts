/**
 * The simulated API server's own tests call it through the suites' one
 * HTTP client (test/support/https-client.ts), with the admin token unless
 * a test says otherwise: a bearer token, a client certificate or no
 * credentials at all.
 */
import type { CertificateAndKey, SimApiServer } from '../../support/sim-apiserver/index.js';
import {
  call as callTarget,
  openLines,
  type HttpRequest,
  type HttpResponse,
  type LineStream,
} from '../../support/https-client.js';

/** One request to the simulation. */
export interface SimRequest extends Omit<HttpRequest, 'token' | 'cert'> {
  /** Bearer token; the admin token when absent (and no certificate is given); `null` sends no credentials. */
  token?: string | null;
  cert?: CertificateAndKey;
}

function asRequest(server: SimApiServer, req: SimRequest): HttpRequest {
  const token = req.token === undefined ? (req.cert ? null : server.adminToken) : req.token;
  const { token: _token, ...rest } = req;
  return token ? { ...rest, token } : rest;
}

/** Sends a request to the simulation and reads the whole response. */
export function call(server: SimApiServer, req: SimRequest): Promise<HttpResponse> {
  return callTarget({ url: server.url, caPem: server.caPem }, asRequest(server, req));
}

/** Opens a streaming response (watch, followed log) of the simulation, read line by line. */
export function openStream(server: SimApiServer, req: SimRequest): Promise<LineStream> {
  return openLines({ url: server.url, caPem: server.caPem }, asRequest(server, req));
}
