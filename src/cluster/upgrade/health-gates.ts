/**
 * The health gates of `upgrade apply`, each with a deadline: the API server
 * answers `/readyz` and reports the expected version at `/version`; this
 * control plane's Node is Ready and its kubelet reports the expected
 * version; every Pod in kube-system is Running (or Succeeded). The same
 * gates, with the old version, tell that a rollback worked.
 *
 * The admin kubeconfig is read from the host again for every gate: a
 * restarted k3s rewrites it.
 */
import { EdgeadmError } from '../../errors.js';
import type { Host } from '../../hosts/host.js';
import { KubeClient } from '../../kube/client.js';
import { kubeCredentialsOf } from '../../kube/kubeconfig.js';
import type { Distribution } from '../distributions/distribution.js';
import { readHostFile } from '../host-files.js';
import type { NodeObject, PodObject } from './cluster-versions.js';
import { GATE_POLL_MS, GATE_REQUEST_TIMEOUT_MS } from './limits.js';
import { reachableServer } from './plan.js';

/** The names of the gates, as the phases and errors name them. */
export type GateName = 'api-ready' | 'node-ready' | 'system-pods';

/** What a gate waits for. */
export interface GateTarget {
  host: Host;
  distribution: Distribution;
  nodeName: string;
  /** The version the API server and the kubelet must report. */
  version: string;
  /**
   * This control plane's own API server (`https://address:port`), when the
   * admin kubeconfig names a shared endpoint instead (kubeadm's
   * controlPlaneEndpoint): the gates must ask the API server just upgraded.
   */
  server?: string;
  /** For the api-ready gate: any of these versions will do instead (an upgrade half way). */
  acceptVersions?: string[];
  timeoutMs: number;
  /** Injected for tests; default Date.now and setTimeout. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** A gate that did not pass within its deadline. */
export class GateError extends EdgeadmError {
  readonly gate: GateName;
  constructor(gate: GateName, message: string) {
    super(message, { code: 'E_UPGRADE_GATE', details: { gate } });
    this.name = 'GateError';
    this.gate = gate;
  }
}

/** A client for the gate's API server, as the host's admin kubeconfig reaches it (read again every time). */
export async function gateClient(target: GateTarget): Promise<KubeClient> {
  const { host, distribution } = target;
  const text = await readHostFile(host, distribution.adminKubeconfigPath);
  const credentials = await kubeCredentialsOf(text, {
    what: `${host.name}:${distribution.adminKubeconfigPath}`,
    readFile: (path) => readHostFile(host, path),
  });
  return new KubeClient({
    ...credentials,
    server: target.server ?? (await reachableServer(host, distribution, credentials)),
  });
}

/**
 * Asks `check` until it returns undefined (passed) or the deadline passes;
 * `check` returns why it has not passed yet.
 */
async function waitFor(gate: GateName, target: GateTarget, check: () => Promise<string | undefined>): Promise<void> {
  const now = target.now ?? Date.now;
  const sleep = target.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const deadline = now() + target.timeoutMs;
  for (;;) {
    let why: string | undefined;
    try {
      why = await check();
    } catch (error) {
      why = (error as Error).message;
    }
    if (why === undefined) return;
    if (now() > deadline) {
      throw new GateError(gate, `the ${gate} gate did not pass within ${target.timeoutMs / 1000} s: ${why}`);
    }
    await sleep(GATE_POLL_MS);
  }
}

/** The API server answers `/readyz` and reports `version` at `/version`. */
export function apiReadyGate(target: GateTarget): Promise<void> {
  return waitFor('api-ready', target, async () => {
    const client = await gateClient(target);
    const ready = await client.raw('GET', '/readyz', { timeoutMs: GATE_REQUEST_TIMEOUT_MS });
    if (ready.status !== 200) return `/readyz answered HTTP ${ready.status}`;
    const version = await client.request<{ gitVersion?: string }>('GET', '/version', {
      timeoutMs: GATE_REQUEST_TIMEOUT_MS,
    });
    const accepted = target.acceptVersions ?? [target.version];
    return version.gitVersion !== undefined && accepted.includes(version.gitVersion)
      ? undefined
      : `the API server reports ${version.gitVersion ?? '(no version)'}, not ${accepted.join(' or ')}`;
  });
}

/** The Node is Ready and its kubelet reports `version`. */
export function nodeReadyGate(target: GateTarget): Promise<void> {
  return waitFor('node-ready', target, async () => {
    const client = await gateClient(target);
    const node = await client.request<
      NodeObject & { status?: { conditions?: Array<{ type: string; status: string }> } }
    >('GET', `/api/v1/nodes/${encodeURIComponent(target.nodeName)}`, { timeoutMs: GATE_REQUEST_TIMEOUT_MS });
    const kubelet = node.status?.nodeInfo?.kubeletVersion;
    if (kubelet !== target.version) return `Node ${target.nodeName} reports kubelet ${kubelet ?? '(none)'}`;
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    return ready?.status === 'True' ? undefined : `Node ${target.nodeName} is not Ready`;
  });
}

/** Every Pod in kube-system is Running or Succeeded. */
export function systemPodsGate(target: GateTarget): Promise<void> {
  return waitFor('system-pods', target, async () => {
    const client = await gateClient(target);
    const pods = await client.list<PodObject & { status?: { phase?: string } }>('/api/v1/namespaces/kube-system/pods');
    const waiting = pods.filter((pod) => pod.status?.phase !== 'Running' && pod.status?.phase !== 'Succeeded');
    return waiting.length === 0
      ? undefined
      : `kube-system Pods not running: ${waiting.map((p) => `${p.metadata.name} (${p.status?.phase ?? 'no phase'})`).join(', ')}`;
  });
}
