/**
 * `register-cloud`'s one request, parsed and checked before any I/O: the
 * cluster's name and labels, the hub's addresses, the discovery of the hub
 * (token, pins, timeout: the same checks as join, in the hub's words), the
 * proxy, and where the agent's kubeconfig is. A malformed `--token` is
 * refused here, before any connection is made and before anything is
 * created on the cluster. A leaf: it imports nothing of the workflow.
 */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { ValidationError } from '../errors.js';
import { parseLabels } from '../kube/label-selector.js';
import { isClusterName, labelProblem } from '../kube/names.js';
import type { BootstrapToken } from '../trust/bootstrap-token.js';
import { parseDiscoveryRequest, type DiscoveryRequest } from '../trust/discovery.js';
import { parseGoDuration } from '../trust/duration.js';
import { parseProxyUrl } from '../tunnel/http-proxy.js';
import { hubDiscoveryError } from './hub-words.js';

/** What `register-cloud` is given, as flags or as options: text, or already parsed. */
export interface RegisterInput {
  /**
   * `host:port` of the hub; several, comma-separated, for a hub of several
   * replicas (discovery asks the first; the agent may dial any).
   */
  hub: string;
  /** `<id>.<secret>`, or parsed. A credential. */
  token: string | BootstrapToken;
  caCertHashes: readonly string[];
  cluster: string;
  /** `k=v,k2=v2` (the flag), or a map. */
  labels: string | Readonly<Record<string, string>>;
  /** The kubeconfig: the agent's identity, or an admin's with `createServiceAccount`. Default: $KUBECONFIG, ~/.kube/config. */
  kubeconfig?: string | undefined;
  /** Create the agent's own ServiceAccount (impersonation rights only) with the admin kubeconfig. */
  createServiceAccount: boolean;
  /** How long to keep trying discovery: milliseconds, or a Go duration (the flag). */
  discoveryTimeout: number | string;
  /** `--proxy`: the HTTP proxy to the hub, stored for the agent (HTTPS_PROXY/NO_PROXY apply without it). */
  proxy?: string | undefined;
  /** Where `KUBECONFIG` is read from; the process's environment by default. */
  env?: NodeJS.ProcessEnv;
}

/** The request: every field checked, nothing left to parse. */
export interface RegisterRequest {
  /** A DNS label. */
  cluster: string;
  labels: Record<string, string>;
  /** The hub's addresses, each `https://host:port`, without repeats. */
  hubAddresses: string[];
  /** Discovery of the hub, at the first address: the token, the pins and the timeout, parsed. */
  discovery: DiscoveryRequest;
  /** The first address as given (`host:port`): where discovery asks. */
  discoveryEndpoint: string;
  /** Absolute. */
  kubeconfig: string;
  createServiceAccount: boolean;
  /** A proxy URL that parses (stored as given, for the agent). */
  proxy?: string;
}

/**
 * Parses `register-cloud`'s input, with no I/O. Checked in order: the name,
 * the labels, the discovery timeout, the hub addresses, then discovery's
 * token, pins and endpoint, then the proxy; the first mistake is the one
 * reported, with its stable code (exit 3).
 *
 * @throws {ValidationError} `E_HUB_CLUSTER_NAME`, `E_LABELS_INVALID`,
 * `E_DURATION_INVALID`, `E_HUB_ADDRESS`, `E_TOKEN_INVALID`,
 * `E_CA_PIN_INVALID`, `E_DISCOVERY_NO_PIN`, `E_DISCOVERY_TIMEOUT_INVALID`,
 * `E_DISCOVERY_ENDPOINT_INVALID`, `E_PROXY_URL`.
 */
export function parseRegisterRequest(input: RegisterInput): RegisterRequest {
  if (!isClusterName(input.cluster)) {
    throw new ValidationError(`invalid --name ${JSON.stringify(input.cluster)}: it must be a DNS label (a-z, 0-9, -)`, {
      code: 'E_HUB_CLUSTER_NAME',
    });
  }
  const labels = labelsOf(input.labels);
  const timeoutMs =
    typeof input.discoveryTimeout === 'string' ? parseGoDuration(input.discoveryTimeout) : input.discoveryTimeout;
  const hubAddresses = hubAddressesOf(input.hub);
  const discoveryEndpoint = (input.hub.split(',')[0] as string).trim();
  let discovery: DiscoveryRequest;
  try {
    discovery = parseDiscoveryRequest({
      endpoint: discoveryEndpoint,
      token: input.token,
      caCertHashes: input.caCertHashes,
      timeoutMs,
    });
  } catch (error) {
    throw hubDiscoveryError(error);
  }
  if (input.proxy !== undefined) parseProxyUrl(input.proxy);
  const env = input.env ?? process.env;
  return {
    cluster: input.cluster,
    labels,
    hubAddresses,
    discovery,
    discoveryEndpoint,
    kubeconfig: resolve(input.kubeconfig ?? env.KUBECONFIG ?? join(homedir(), '.kube', 'config')),
    createServiceAccount: input.createServiceAccount,
    ...(input.proxy === undefined ? {} : { proxy: input.proxy }),
  };
}

/** The labels: `k=v,…` parsed, or a map checked by the same rule. */
function labelsOf(labels: string | Readonly<Record<string, string>>): Record<string, string> {
  if (typeof labels === 'string') return parseLabels(labels);
  const problem = labelProblem(labels);
  if (problem !== undefined) throw new ValidationError(problem, { code: 'E_LABELS_INVALID' });
  return { ...labels };
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
