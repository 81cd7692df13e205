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
import { EdgeadmError, ValidationError } from '../errors.js';
import { callHub } from '../hub-client/hub-client.js';
import { AGENT_CERT_ORGANIZATION } from '../hub/contract/agent-certificate.js';
import type { Logger } from '../log/run-log.js';
import { discoverClusterInfo } from '../trust/discovery.js';
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
import { caPinsOfPem, parseCaPins } from '../trust/ca-pin.js';
import { readAgentState, writeAgentCredentials, writeAgentState, type AgentState } from './agent-state.js';
import { CERT_RENEW_AT_LIFETIME_FRACTION } from '../tunnel/limits.js';
import { hubRoute, proxyDisplay } from '../tunnel/http-proxy.js';
import { readUpstreamKubeconfig, Upstream, type UpstreamCredentials } from '../tunnel/upstream.js';

/** The kubeconfig of the agent's own ServiceAccount, in the data directory (mode 0600). */
export const AGENT_KUBECONFIG_FILE = 'upstream.kubeconfig';

/** Options of {@link registerCluster}. */
export interface RegisterOptions {
  /**
   * `host:port` of the hub; several, comma-separated, for a hub of several
   * replicas (discovery asks the first; the agent may dial any).
   */
  hub: string;
  /** `<id>.<secret>`. A credential. */
  token: string;
  caCertHashes: string[];
  cluster: string;
  labels: Record<string, string>;
  /** The kubeconfig given (absolute path): the agent's identity, or an admin's with `createServiceAccount`. */
  kubeconfig: string;
  /**
   * Create the agent's own ServiceAccount (impersonation rights only) with
   * the admin `kubeconfig`, and give the agent that identity; the admin
   * credentials are not stored.
   */
  createServiceAccount: boolean;
  dataDir: string;
  discoveryTimeoutMs: number;
  logger: Logger;
  /** `--proxy`: the HTTP proxy to the hub, stored for the agent (HTTPS_PROXY/NO_PROXY apply without it). */
  proxy?: string;
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
  caCertHashes: readonly string[],
  now: Date = new Date(),
): AgentState | undefined {
  let state: AgentState;
  try {
    state = readAgentState(dataDir);
  } catch {
    return undefined;
  }
  if (state.cluster !== cluster) return undefined;
  const pins = new Set(parseCaPins(caCertHashes));
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
 * Registers the cluster and writes the agent state; returns it. Everything
 * on the edge cluster (the agent's identity, its right to impersonate) is
 * settled before the hub token is used, so a refusal there spends no
 * token usage and registers nothing at the hub.
 */
export async function registerCluster(options: RegisterOptions): Promise<Registration> {
  const given = await readUpstreamKubeconfig(options.kubeconfig);
  let agentCredentials: UpstreamCredentials | undefined;
  let identity = `the identity of ${options.kubeconfig}`;
  if (options.createServiceAccount) {
    const account = await ensureAgentServiceAccount({ admin: given, logger: options.logger });
    agentCredentials = account.credentials;
    identity = `ServiceAccount ${AGENT_SERVICE_ACCOUNT_NAMESPACE}/${AGENT_SERVICE_ACCOUNT_NAME}`;
    options.logger.info(
      account.hasChanged ? `created ${identity} for the agent` : `${identity} for the agent is already in place`,
    );
  }
  const upstream = new Upstream(agentCredentials ?? given, options.logger);
  try {
    await requireImpersonation(upstream, options.logger, identity);
  } finally {
    upstream.close();
  }
  const kubeconfig = agentCredentials === undefined ? options.kubeconfig : join(options.dataDir, AGENT_KUBECONFIG_FILE);
  const writeAgentKubeconfig = (): void => {
    if (agentCredentials === undefined) return;
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    writeSecretFileAtomic(kubeconfig, renderAgentKubeconfig(agentCredentials));
  };
  const hubAddresses = hubAddressesOf(options.hub);
  const existing = existingRegistration(options.dataDir, options.cluster, options.caCertHashes);
  if (existing !== undefined) {
    const state: AgentState = { ...existing, kubeconfig };
    delete state.proxy;
    if (options.proxy !== undefined) state.proxy = options.proxy;
    delete state.hubServers;
    const servers = otherHubServers(existing.hubServer, hubAddresses);
    if (servers !== undefined) state.hubServers = servers;
    writeAgentKubeconfig();
    if (
      existing.kubeconfig !== kubeconfig ||
      existing.proxy !== state.proxy ||
      JSON.stringify(existing.hubServers) !== JSON.stringify(state.hubServers)
    ) {
      writeAgentState(options.dataDir, state);
    }
    options.logger.info(
      `cluster ${options.cluster} is already registered with the hub at ${existing.hubServer}; keeping its credentials`,
    );
    return { state, wasRegistered: true };
  }
  const hubRouteOptions = { explicit: options.proxy, env: options.env };
  const hubAddress = new URL(hubAddresses[0] as string);
  const route = await hubRoute(hubAddress.origin, hubRouteOptions);
  if (route.proxy !== undefined)
    options.logger.info(`reaching the hub through the HTTP proxy ${proxyDisplay(route.proxy)}`);
  const discovered = await discoverClusterInfo({
    ...(route.agent === undefined ? {} : { agent: route.agent }),
    endpoint: (options.hub.split(',')[0] as string).trim(),
    token: options.token,
    caCertHashes: options.caCertHashes,
    timeoutMs: options.discoveryTimeoutMs,
    logger: options.logger,
  }).catch((error: unknown) => {
    throw hubDiscoveryError(error);
  });
  const csr = await createCsr({ commonName: options.cluster, organizations: [AGENT_CERT_ORGANIZATION] });
  const answer = await callHub<{ certPem: string; caPem: string; server: string }>({
    server: discovered.server,
    caPem: discovered.caPem,
    method: 'POST',
    path: '/hub/v1/register',
    token: options.token,
    ...(route.agent === undefined ? {} : { agent: route.agent }),
    body: { name: options.cluster, labels: options.labels, csr: csr.csrPem },
  }).catch((error: unknown) => {
    throw withNameTakenHints(error, options.cluster);
  });
  writeAgentKubeconfig();
  const servers = otherHubServers(discovered.server, hubAddresses);
  const state: AgentState = {
    hubServer: discovered.server,
    ...(servers === undefined ? {} : { hubServers: servers }),
    cluster: options.cluster,
    kubeconfig,
    ...(options.proxy === undefined ? {} : { proxy: options.proxy }),
    hubCaPem: discovered.caPem,
    certPem: answer.certPem,
    keyPem: csr.keyPem,
  };
  writeAgentState(options.dataDir, state);
  options.logger.info(`registered cluster ${options.cluster} with the hub at ${discovered.server}`);
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

/**
 * The hub addresses of `register-cloud`'s argument: `host:port`, or several
 * comma-separated (one per hub replica), each as `https://host:port`.
 *
 * @throws {ValidationError} `E_HUB_ADDRESS` for an empty or malformed one.
 */
export function hubAddressesOf(text: string): string[] {
  const parts = text.split(',').map((part) => part.trim());
  return [
    ...new Set(
      parts.map((part) => {
        let url: URL | undefined;
        try {
          url = part === '' || part.includes('/') ? undefined : new URL(`https://${part}`);
        } catch {
          url = undefined;
        }
        if (url === undefined || url.hostname === '' || url.username !== '' || url.password !== '') {
          throw new ValidationError(`${JSON.stringify(part)} is not a hub address (host:port)`, {
            code: 'E_HUB_ADDRESS',
            hints: ['Give the hub as host:port, or several replicas as host1:port,host2:port.'],
          });
        }
        return url.origin;
      }),
    ),
  ];
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
