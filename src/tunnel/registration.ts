/**
 * `register-cloud`: trust the hub by token and pin (the same discovery as
 * join, with the same messages), make a key and CSR here (the key never
 * leaves the host), get the certificate the hub signs for the cluster, and
 * store it all under the data directory.
 */
import { X509Certificate } from 'node:crypto';
import { callHub } from '../hub/hub-client.js';
import { AGENT_CERT_ORGANIZATION } from '../hub/limits.js';
import type { Logger } from '../log/run-log.js';
import { discoverClusterInfo } from '../trust/discovery.js';
import { createCsr } from '../trust/pki.js';
import { writeAgentCredentials, writeAgentState, type AgentState } from './agent-state.js';
import { CERT_RENEW_AT_LIFETIME_FRACTION } from './limits.js';

/** Options of {@link registerCluster}. */
export interface RegisterOptions {
  /** `host:port` of the hub. */
  hub: string;
  /** `<id>.<secret>`. A credential. */
  token: string;
  caCertHashes: string[];
  cluster: string;
  labels: Record<string, string>;
  /** The kubeconfig the agent will use (absolute path). */
  kubeconfig: string;
  dataDir: string;
  discoveryTimeoutMs: number;
  logger: Logger;
}

/** Registers the cluster and writes the agent state; returns it. */
export async function registerCluster(options: RegisterOptions): Promise<AgentState> {
  const discovered = await discoverClusterInfo({
    endpoint: options.hub,
    token: options.token,
    caCertHashes: options.caCertHashes,
    timeoutMs: options.discoveryTimeoutMs,
    logger: options.logger,
  });
  const csr = await createCsr({ commonName: options.cluster, organizations: [AGENT_CERT_ORGANIZATION] });
  const answer = await callHub<{ certPem: string; caPem: string; server: string }>({
    server: discovered.server,
    caPem: discovered.caPem,
    method: 'POST',
    path: '/hub/v1/register',
    token: options.token,
    body: { name: options.cluster, labels: options.labels, csr: csr.csrPem },
  });
  const state: AgentState = {
    hubServer: discovered.server,
    cluster: options.cluster,
    kubeconfig: options.kubeconfig,
    hubCaPem: discovered.caPem,
    certPem: answer.certPem,
    keyPem: csr.keyPem,
  };
  writeAgentState(options.dataDir, state);
  options.logger.info(`registered cluster ${options.cluster} with the hub at ${discovered.server}`);
  return state;
}

/** Whether a certificate has used up {@link CERT_RENEW_AT_LIFETIME_FRACTION} of its lifetime at `now`. */
export function isRenewalDue(certPem: string, now: Date = new Date()): boolean {
  const certificate = new X509Certificate(certPem);
  const start = Date.parse(certificate.validFrom);
  const end = Date.parse(certificate.validTo);
  return now.getTime() >= start + (end - start) * CERT_RENEW_AT_LIFETIME_FRACTION;
}

/** Trades the current certificate for a new one with a new key; writes both; returns the new state. */
export async function renewAgentCertificate(dataDir: string, state: AgentState, logger: Logger): Promise<AgentState> {
  const csr = await createCsr({ commonName: state.cluster, organizations: [AGENT_CERT_ORGANIZATION] });
  const answer = await callHub<{ certPem: string }>({
    server: state.hubServer,
    caPem: state.hubCaPem,
    certPem: state.certPem,
    keyPem: state.keyPem,
    method: 'POST',
    path: '/hub/v1/renew',
    body: { csr: csr.csrPem },
  });
  writeAgentCredentials(dataDir, { certPem: answer.certPem, keyPem: csr.keyPem });
  logger.info(`renewed the hub certificate of cluster ${state.cluster}`);
  return { ...state, certPem: answer.certPem, keyPem: csr.keyPem };
}
