/**
 * What the SIMULATED node agents share (the simulated k3s agent and the
 * simulated kubelet of test/support/sim-kubeadm; neither is real): HTTPS
 * calls to the simulated API server, registering a Node and keeping it Ready
 * with heartbeats the way a kubelet does, and the RBAC that stands in for
 * the kubelet credentials a real cluster issues.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { dirname } from 'node:path';
import { readSimTiming } from './sim-apiserver/sim-timing.js';

/** How often Nodes get a heartbeat (the kubelet's default node status update is 10 s). */
export const HEARTBEAT_INTERVAL_MS = 10_000;
/** One request's bound. */
const REQUEST_TIMEOUT_MS = 10_000;

/** How a simulated agent authenticates: a bearer token or a client certificate. */
export interface SimCredentials {
  token?: string;
  certPem?: string;
  keyPem?: string;
}

/** One HTTPS call. */
export interface SimCall extends SimCredentials {
  method: string;
  url: string;
  /** Without a CA, TLS is not verified (a joining node's first, pin-checked fetch). */
  caPem?: string;
  body?: unknown;
  contentType?: string;
  /** Extra request headers. */
  headers?: Record<string, string>;
}

/** A log line on stderr that says which simulation wrote it. */
export function simLogger(name: string): (message: string) => void {
  return (message) => process.stderr.write(`${new Date().toISOString()} ${name}: ${message}\n`);
}

/**
 * The variable a fixture package's executable script sets to the Kubernetes
 * version its package carries (see ../sim-k3s/fixture.ts,
 * `simExecutableScript`): a new package's binaries report the new version,
 * as a real upgrade swaps in binaries built for it.
 */
export const SIM_VERSION_ENV = 'EDGEADM_SIM_VERSION';

/** The version this simulated executable reports: its package's, else `fallback` (which ends in `+sim`). */
export function simReportedVersion(fallback: string): string {
  const given = process.env[SIM_VERSION_ENV];
  return given !== undefined && /^v\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?$/.test(given) ? given : fallback;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes through a temporary file, so readers never see half a file. */
export async function writeAtomically(path: string, text: string, mode: number): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.tmp-${process.pid}`;
  await writeFile(temporary, text, { mode });
  await rename(temporary, path);
}

/** One HTTPS request. */
export function call(options: SimCall): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body));
    const req = request(
      options.url,
      {
        method: options.method,
        ...(options.caPem ? { ca: options.caPem } : { rejectUnauthorized: false }),
        ...(options.certPem && options.keyPem ? { cert: options.certPem, key: options.keyPem } : {}),
        headers: {
          Accept: 'application/json',
          ...options.headers,
          ...(options.token ? { Authorization: `Bearer ${options.token}` } : {}),
          ...(body ? { 'Content-Type': options.contentType ?? 'application/json' } : {}),
        },
        timeout: REQUEST_TIMEOUT_MS,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

/** A call that must succeed (2xx, or one of `okStatuses`); returns the parsed body. */
export async function expectOk(what: string, options: SimCall, okStatuses: number[] = []): Promise<unknown> {
  const response = await call(options);
  if ((response.status < 200 || response.status >= 300) && !okStatuses.includes(response.status)) {
    throw new Error(`${what}: HTTP ${response.status} ${response.body.slice(0, 300)}`);
  }
  return response.body ? JSON.parse(response.body) : undefined;
}

/** Where and as whom a simulated agent talks to the API server about its Node. */
export interface SimNodeOptions extends SimCredentials {
  server: string;
  caPem: string;
  name: string;
  /** Reported as the kubelet version (ends in `+sim`). */
  version: string;
}

function credentialsOf(options: SimNodeOptions): SimCall {
  return {
    method: 'GET',
    url: options.server,
    caPem: options.caPem,
    ...(options.token ? { token: options.token } : {}),
    ...(options.certPem ? { certPem: options.certPem } : {}),
    ...(options.keyPem ? { keyPem: options.keyPem } : {}),
  };
}

/**
 * Registers the Node as the kubelet does (kubernetes
 * `pkg/kubelet/kubelet_node_status.go`, registerWithAPIServer and
 * tryRegisterWithAPIServer): POST the Node; 409 AlreadyExists means it was
 * registered before, and the existing Node is then read with a GET — a
 * restarted kubelet, or one behind an offline edge-proxy that answers 409
 * for a node it knows, is registered once that GET answers. Then a first
 * heartbeat, whose failure (offline) does not undo the registration.
 *
 * One difference on purpose: the real kubelet reconciles only its default
 * labels on an existing Node (hostname, OS, architecture, zone); the
 * simulation also merges the `labels` it was given when the existing Node
 * lacks them (a PATCH), which some suites use to relabel a Node by
 * restarting its agent.
 */
export async function registerNode(
  options: SimNodeOptions & {
    labels: Record<string, string>;
    /** Taints the Node registers with, as the kubelet's --register-with-taints gives them. */
    taints?: Array<{ key: string; value?: string; effect: string }>;
  },
  log: (message: string) => void = () => {},
): Promise<void> {
  const base = credentialsOf(options);
  const created = await call({
    ...base,
    method: 'POST',
    url: `${options.server}/api/v1/nodes`,
    body: {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: options.name, labels: options.labels },
      ...(options.taints && options.taints.length > 0 ? { spec: { taints: options.taints } } : {}),
    },
  });
  if (created.status === 409) {
    const existing = (await expectOk(`get the existing Node ${options.name}`, {
      ...base,
      method: 'GET',
      url: `${options.server}/api/v1/nodes/${options.name}`,
    })) as { metadata?: { labels?: Record<string, string> } };
    log(`Node ${options.name} was previously registered (409 AlreadyExists, then GET)`);
    const labels = existing.metadata?.labels ?? {};
    if (Object.entries(options.labels).some(([key, value]) => labels[key] !== value)) {
      await expectOk(`label Node ${options.name}`, {
        ...base,
        method: 'PATCH',
        url: `${options.server}/api/v1/nodes/${options.name}`,
        contentType: 'application/merge-patch+json',
        body: { metadata: { labels: options.labels } },
      });
    }
  } else if (created.status < 200 || created.status >= 300) {
    throw new Error(`create Node ${options.name}: HTTP ${created.status} ${created.body.slice(0, 300)}`);
  }
  await heartbeat(options).catch((error: unknown) => log(`first heartbeat failed: ${(error as Error).message}`));
}

/** Marks the Node Ready now. */
export async function heartbeat(options: SimNodeOptions): Promise<void> {
  // A kubelet reads its Node before it updates the status.
  await expectOk(`get Node ${options.name}`, {
    ...credentialsOf(options),
    method: 'GET',
    url: `${options.server}/api/v1/nodes/${options.name}`,
  });
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  await expectOk(`update the status of Node ${options.name}`, {
    ...credentialsOf(options),
    method: 'PATCH',
    url: `${options.server}/api/v1/nodes/${options.name}/status`,
    contentType: 'application/merge-patch+json',
    body: {
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'a simulated node agent reports this node ready',
            lastHeartbeatTime: now,
            lastTransitionTime: now,
          },
        ],
        nodeInfo: { kubeletVersion: options.version, containerRuntimeVersion: 'sim://none' },
      },
    },
  });
}

/** Keeps a Node Ready until the process is stopped (every 10 s, or as a test shortened it: sim-timing.ts). */
export async function keepReady(options: SimNodeOptions, log: (message: string) => void): Promise<never> {
  const intervalMs = readSimTiming().heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_MS;
  for (;;) {
    await sleep(intervalMs);
    await heartbeat(options).catch((error: unknown) => log(`heartbeat failed: ${(error as Error).message}`));
  }
}

/**
 * RBAC that stands in for the kubelet credentials a real cluster issues
 * (client certificates and the Node authorizer): the given groups may
 * register, update and watch Nodes, read and watch Pods, and write Pod
 * status (the Node authorizer would limit each node to its own).
 */
export function nodeRegistrationObjects(name: string, groups: readonly string[]): unknown[] {
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: [
        {
          apiGroups: [''],
          resources: ['nodes', 'nodes/status'],
          verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'],
        },
        // The kubelet's pod source and status manager (../sim-kubelet-pods.ts).
        { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['pods/status'], verbs: ['get', 'update', 'patch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: groups.map((group) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group })),
    },
  ];
}
