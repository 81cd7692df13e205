/**
 * What `register-cloud` leaves under the agent's data directory, and what
 * `agent tunnel` reads back: `agent.yaml` (hub address, cluster name,
 * upstream kubeconfig path, HTTP proxy; mode 0600), `hub-ca.crt`, and the client certificate and
 * key (`client.crt`, `client.key`, mode 0600).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump, load } from 'js-yaml';
import { EdgeadmError } from '../errors.js';
import { writeSecretFileAtomic } from '../trust/secret-file.js';

/** The agent's settings (no secrets). */
export interface AgentSettings {
  /** `https://host:port` of the hub. */
  hubServer: string;
  /**
   * Every address of the hub when it runs as several replicas (`hubServer`
   * among them): the agent moves to the next when its replica goes away.
   * Absent in configs written before, and for a hub given one address.
   */
  hubServers?: string[];
  cluster: string;
  /** The kubeconfig the agent reaches its API server with. */
  kubeconfig: string;
  /** `http://[user:pass@]host:port` of the HTTP proxy to the hub (a secret when it has credentials). */
  proxy?: string;
}

/** Everything the agent needs. `keyPem` is a secret. */
export interface AgentState extends AgentSettings {
  hubCaPem: string;
  certPem: string;
  keyPem: string;
}

const SETTINGS_FILE = 'agent.yaml';
const CA_FILE = 'hub-ca.crt';
const CERT_FILE = 'client.crt';
const KEY_FILE = 'client.key';

/** Writes the agent state; the key and certificate atomically, 0600. */
export function writeAgentState(dataDir: string, state: AgentState): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dataDir, CA_FILE), state.hubCaPem, { mode: 0o644 });
  writeAgentCredentials(dataDir, { certPem: state.certPem, keyPem: state.keyPem });
  const settings: AgentSettings = {
    hubServer: state.hubServer,
    ...(state.hubServers === undefined ? {} : { hubServers: state.hubServers }),
    cluster: state.cluster,
    kubeconfig: state.kubeconfig,
    ...(state.proxy === undefined ? {} : { proxy: state.proxy }),
  };
  writeFileSync(join(dataDir, SETTINGS_FILE), dump(settings), { mode: 0o600 });
}

/** Replaces the client certificate and key (renewal). */
export function writeAgentCredentials(dataDir: string, credentials: { certPem: string; keyPem: string }): void {
  // Key first: a crash between the two leaves a key that matches no certificate only until the next renewal try.
  writeSecretFileAtomic(join(dataDir, KEY_FILE), credentials.keyPem);
  writeSecretFileAtomic(join(dataDir, CERT_FILE), credentials.certPem);
}

/**
 * Reads the agent state.
 *
 * @throws {EdgeadmError} `E_AGENT_STATE` (exit 3).
 */
export function readAgentState(dataDir: string): AgentState {
  try {
    const settings = load(readFileSync(join(dataDir, SETTINGS_FILE), 'utf8')) as Partial<AgentSettings>;
    if (
      typeof settings.hubServer !== 'string' ||
      typeof settings.cluster !== 'string' ||
      typeof settings.kubeconfig !== 'string'
    ) {
      throw new Error(`${SETTINGS_FILE} is incomplete`);
    }
    if (settings.proxy !== undefined && typeof settings.proxy !== 'string') throw new Error(`${SETTINGS_FILE}: proxy`);
    const servers = settings.hubServers;
    if (servers !== undefined && (!Array.isArray(servers) || !servers.every((one) => typeof one === 'string'))) {
      throw new Error(`${SETTINGS_FILE}: hubServers must be a list of https://host:port`);
    }
    return {
      hubServer: settings.hubServer,
      ...(servers === undefined ? {} : { hubServers: servers }),
      cluster: settings.cluster,
      kubeconfig: settings.kubeconfig,
      ...(settings.proxy === undefined ? {} : { proxy: settings.proxy }),
      hubCaPem: readFileSync(join(dataDir, CA_FILE), 'utf8'),
      certPem: readFileSync(join(dataDir, CERT_FILE), 'utf8'),
      keyPem: readFileSync(join(dataDir, KEY_FILE), 'utf8'),
    };
  } catch (error) {
    throw new EdgeadmError(`cannot read the agent state in ${dataDir}: ${(error as Error).message}`, {
      code: 'E_AGENT_STATE',
      exitCode: 3,
      cause: error,
      hints: ['Register the cluster first with "edgeadm register-cloud", using the same --data-dir.'],
    });
  }
}
