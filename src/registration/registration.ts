/**
 * `register-cloud`: trust the hub by token and pin (the same discovery as
 * join, with the same messages), make a key and CSR here (the key never
 * leaves the host), get the certificate the hub signs for the cluster, and
 * store it all under the data directory.
 */
import { X509Certificate } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { Agent as HttpsAgent } from 'node:https';
import { join } from 'node:path';
import { EdgeadmError } from '../errors.js';
import { callHub } from '../hub-client/hub-client.js';
import { AGENT_CERT_ORGANIZATION } from '../hub/contract/agent-certificate.js';
import type { Logger } from '../log/run-log.js';
import { discover } from '../trust/discovery.js';
import { formatBootstrapToken } from '../trust/bootstrap-token.js';
import { parseRegisterRequest, type RegisterInput, type RegisterRequest } from './register-request.js';
import { hubDiscoveryError } from './hub-words.js';
import { renderKubeconfig } from '../kube/kubeconfig.js';
import { createCsr } from '../trust/pki.js';
import { writeSecretFileAtomic } from '../trust/secret-file.js';
import {
  AGENT_SERVICE_ACCOUNT_NAME,
  AGENT_SERVICE_ACCOUNT_NAMESPACE,
  ensureAgentServiceAccount,
  requireImpersonation,
} from './agent-rbac.js';
import { caPinsOfPem, type CaPin } from '../trust/ca-pin.js';
import { readAgentState, writeAgentCredentials, writeAgentState, type AgentState } from './agent-state.js';
import { CERT_RENEW_AT_LIFETIME_FRACTION } from '../tunnel/limits.js';
import { hubRoute, proxyDisplay } from '../tunnel/http-proxy.js';
import { readUpstreamKubeconfig, Upstream, type UpstreamCredentials } from '../tunnel/upstream.js';

/** The kubeconfig of the agent's own ServiceAccount, in the data directory (mode 0600). */
export const AGENT_KUBECONFIG_FILE = 'upstream.kubeconfig';

/** Options of {@link registerCluster}: the request's input, and where the agent's state goes. */
export interface RegisterOptions extends RegisterInput {
  dataDir: string;
  logger: Logger;
}

/** What {@link register} does its I/O with, beside the request. */
export interface RegisterIo {
  dataDir: string;
  logger: Logger;
  /** The environment HTTPS_PROXY / NO_PROXY are read from; the process's by default. */
  env?: NodeJS.ProcessEnv;
}

/** What {@link registerCluster} did. */
export interface Registration {
  state: AgentState;
  /** The data directory already held this cluster's valid registration with this hub: the hub was not asked. */
  wasRegistered: boolean;
}

/**
 * The registration already in `dataDir`, when it is for `cluster`, its hub
 * CA matches one of the pins, and its certificate (issued by that CA) is
 * still valid: a re-run keeps it instead of registering again.
 */
export function existingRegistration(
  dataDir: string,
  cluster: string,
  caPins: readonly CaPin[],
  now: Date = new Date(),
): AgentState | undefined {
  let state: AgentState;
  try {
    state = readAgentState(dataDir);
  } catch {
    return undefined;
  }
  if (state.cluster !== cluster) return undefined;
  const pins = new Set<string>(caPins);
  try {
    const isPinned = caPinsOfPem(state.hubCaPem).some((pin) => pins.has(pin));
    const certificate = new X509Certificate(state.certPem);
    const ca = new X509Certificate(state.hubCaPem);
    if (!isPinned || !certificate.checkIssued(ca) || !certificate.verify(ca.publicKey)) return undefined;
    if (Date.parse(certificate.validTo) <= now.getTime()) return undefined;
  } catch {
    return undefined;
  }
  return state;
}

/**
 * Registers the cluster from options not yet parsed: {@link parseRegisterRequest},
 * then {@link register}. For callers that build the options themselves
 * (tests, benchmarks); `register-cloud` parses its request first.
 */
export function registerCluster(options: RegisterOptions): Promise<Registration> {
  return register(parseRegisterRequest(options), options);
}

/**
 * Registers the cluster and writes the agent state; returns it. Everything
 * on the edge cluster (the agent's identity, its right to impersonate) is
 * settled before the hub token is used, so a refusal there spends no
 * token usage and registers nothing at the hub.
 */
export async function register(request: RegisterRequest, io: RegisterIo): Promise<Registration> {
  const { dataDir, logger } = io;
  const given = await readUpstreamKubeconfig(request.kubeconfig);
  let agentCredentials: UpstreamCredentials | undefined;
  let identity = `the identity of ${request.kubeconfig}`;
  if (request.createServiceAccount) {
    const account = await ensureAgentServiceAccount({ admin: given, logger });
    agentCredentials = account.credentials;
    identity = `ServiceAccount ${AGENT_SERVICE_ACCOUNT_NAMESPACE}/${AGENT_SERVICE_ACCOUNT_NAME}`;
    logger.info(
      account.hasChanged ? `created ${identity} for the agent` : `${identity} for the agent is already in place`,
    );
  }
  const upstream = new Upstream(agentCredentials ?? given, logger);
  try {
    await requireImpersonation(upstream, logger, identity);
  } finally {
    upstream.close();
  }
  const kubeconfig = agentCredentials === undefined ? request.kubeconfig : join(dataDir, AGENT_KUBECONFIG_FILE);
  const writeAgentKubeconfig = (): void => {
    if (agentCredentials === undefined) return;
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    writeSecretFileAtomic(kubeconfig, renderAgentKubeconfig(agentCredentials));
  };
  const { hubAddresses } = request;
  const existing = existingRegistration(dataDir, request.cluster, request.discovery.caPins);
  if (existing !== undefined) {
    const state: AgentState = { ...existing, kubeconfig };
    delete state.proxy;
    if (request.proxy !== undefined) state.proxy = request.proxy;
    delete state.hubServers;
    const servers = otherHubServers(existing.hubServer, hubAddresses);
    if (servers !== undefined) state.hubServers = servers;
    writeAgentKubeconfig();
    if (
      existing.kubeconfig !== kubeconfig ||
      existing.proxy !== state.proxy ||
      JSON.stringify(existing.hubServers) !== JSON.stringify(state.hubServers)
    ) {
      writeAgentState(dataDir, state);
    }
    logger.info(
      `cluster ${request.cluster} is already registered with the hub at ${existing.hubServer}; keeping its credentials`,
    );
    return { state, wasRegistered: true };
  }
  const hubRouteOptions = { explicit: request.proxy, env: io.env };
  const hubAddress = new URL(hubAddresses[0] as string);
  const route = await hubRoute(hubAddress.origin, hubRouteOptions);
  if (route.proxy !== undefined) logger.info(`reaching the hub through the HTTP proxy ${proxyDisplay(route.proxy)}`);
  const discoveryIo = { logger: logger, ...(route.agent === undefined ? {} : { agent: route.agent }) };
  const discovered = await discover(request.discovery, discoveryIo).catch((error: unknown) => {
    throw hubDiscoveryError(error);
  });
  const csr = await createCsr({ commonName: request.cluster, organizations: [AGENT_CERT_ORGANIZATION] });
  const answer = await callHub<{ certPem: string; caPem: string; server: string }>({
    server: discovered.server,
    caPem: discovered.caPem,
    method: 'POST',
    path: '/hub/v1/register',
    token: formatBootstrapToken(request.discovery.token),
    ...(route.agent === undefined ? {} : { agent: route.agent }),
    body: { name: request.cluster, labels: request.labels, csr: csr.csrPem },
  }).catch((error: unknown) => {
    throw withNameTakenHints(error, request.cluster);
  });
  writeAgentKubeconfig();
  const servers = otherHubServers(discovered.server, hubAddresses);
  const state: AgentState = {
    hubServer: discovered.server,
    ...(servers === undefined ? {} : { hubServers: servers }),
    cluster: request.cluster,
    kubeconfig,
    ...(request.proxy === undefined ? {} : { proxy: request.proxy }),
    hubCaPem: discovered.caPem,
    certPem: answer.certPem,
    keyPem: csr.keyPem,
  };
  writeAgentState(dataDir, state);
  logger.info(`registered cluster ${request.cluster} with the hub at ${discovered.server}`);
  return { state, wasRegistered: false };
}

/** The agent's own kubeconfig: server, CA and ServiceAccount token. */
function renderAgentKubeconfig(credentials: UpstreamCredentials): string {
  return renderKubeconfig(
    {
      server: credentials.server,
      contextName: AGENT_SERVICE_ACCOUNT_NAME,
      ...(credentials.caPem === undefined ? {} : { caPem: credentials.caPem }),
      ...(credentials.token === undefined ? {} : { token: credentials.token }),
    },
    AGENT_SERVICE_ACCOUNT_NAME,
  );
}

/** The other hub addresses an agent keeps beside the discovered one, or undefined for a single hub. */
function otherHubServers(discovered: string, given: readonly string[]): string[] | undefined {
  const all = [...new Set([discovered, ...given])];
  return all.length > 1 ? all : undefined;
}

/** Whether a certificate has used up {@link CERT_RENEW_AT_LIFETIME_FRACTION} of its lifetime at `now`. */
export function isRenewalDue(certPem: string, now: Date = new Date()): boolean {
  const certificate = new X509Certificate(certPem);
  const start = Date.parse(certificate.validFrom);
  const end = Date.parse(certificate.validTo);
  return now.getTime() >= start + (end - start) * CERT_RENEW_AT_LIFETIME_FRACTION;
}

/** Trades the current certificate for a new one with a new key; writes both; returns the new state. */
export async function renewAgentCertificate(
  dataDir: string,
  state: AgentState,
  logger: Logger,
  agent?: HttpsAgent,
): Promise<AgentState> {
  const csr = await createCsr({ commonName: state.cluster, organizations: [AGENT_CERT_ORGANIZATION] });
  const answer = await callHub<{ certPem: string }>({
    server: state.hubServer,
    caPem: state.hubCaPem,
    certPem: state.certPem,
    keyPem: state.keyPem,
    method: 'POST',
    path: '/hub/v1/renew',
    body: { csr: csr.csrPem },
    ...(agent === undefined ? {} : { agent }),
  });
  writeAgentCredentials(dataDir, { certPem: answer.certPem, keyPem: csr.keyPem });
  logger.info(`renewed the hub certificate of cluster ${state.cluster}`);
  return { ...state, certPem: answer.certPem, keyPem: csr.keyPem };
}

/**
 * The hub's "already registered" with what to do about it: most often the
 * name is held by this operator's own earlier attempt (a failed `--host`
 * install keeps its registration for a re-run of the same command).
 */
export function withNameTakenHints(error: unknown, cluster: string): unknown {
  if (!(error instanceof EdgeadmError) || error.code !== 'E_HUB_CLUSTER_EXISTS') return error;
  return new EdgeadmError(error.message, {
    code: error.code,
    exitCode: error.exitCode,
    ...(error.details === undefined ? {} : { details: error.details }),
    cause: error,
    hints: [
      `If an earlier register-cloud of ${cluster} failed (its registration is kept in $EDGEADM_HOME/register-cloud/${cluster}), run that same command again: it installs the kept registration without asking the hub.`,
      `To register ${cluster} anew in another way, remove the old registration first: edgeadm hub clusters delete ${cluster}`,
      'If another cluster already has this name, choose another --name.',
    ],
  });
}
