/**
 * The three ways the benchmark's kube-apiserver reaches an edge node's
 * kubelet, switched on one real kubeadm cluster of the rig:
 *
 * - `direct`: no egress selector at all (the flag taken out of the API
 *   server's static Pod manifest): the API server dials the kubelet itself,
 *   as a cluster without edgeadm's node tunnel does;
 * - `node-tunnel`: edgeadm's, as `init --enable-edge` set it up (HTTP CONNECT
 *   on the Unix socket, `edgeadm agent node-tunnel-server`, the node's
 *   `edgeadm agent node-tunnel`);
 * - `konnectivity-grpc` / `konnectivity-http-connect`: the upstream
 *   apiserver-network-proxy (built from bench/peers/konnectivity by
 *   test/real/build.sh) as kubernetes.io's "Set up Konnectivity service"
 *   describes it: proxy-server on the control plane with its Unix socket in
 *   the API server's egress selector (`GRPC`, as that page shows, or
 *   `HTTPConnect`), proxy-agent on the edge node dialling the server's agent
 *   port over mTLS. Both use the cluster's own credentials, as edgeadm's do:
 *   the API server's serving certificate on the agent port, the node's
 *   kubelet client certificate for the agent. The agent runs as a process on
 *   the node, not as the page's DaemonSet, so the server checks the agent's
 *   client certificate against the cluster CA instead of a service account
 *   token; the data path is the same.
 *
 * A switch rewrites the API server's manifest (the kubelet then replaces the
 * static Pod) and waits until the new API server runs with that configuration
 * and an exec reaches the edge pod through it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import type { TestHost } from '../../test/support/test-hosts.js';
import type { RealCluster } from '../../test/support/real/main-job.js';
import { EGRESS_CONFIG_PATH, EGRESS_DIR } from '../../src/node-tunnel/limits.js';

/** The paths the benchmark compares. */
export const PATH_NAMES = ['direct', 'node-tunnel', 'konnectivity-grpc', 'konnectivity-http-connect'] as const;
export type PathName = (typeof PATH_NAMES)[number];

const MANIFEST = '/etc/kubernetes/manifests/kube-apiserver.yaml';
/** The manifest as init wrote it, kept outside the kubelet's manifest directory. */
const ORIGINAL_MANIFEST = `${EGRESS_DIR}/bench-kube-apiserver.yaml.orig`;
/** In the directory init mounts into the API server's Pod, as the node tunnel's socket. */
const KONNECTIVITY_SOCKET = `${EGRESS_DIR}/konnectivity-server.socket`;
const KONNECTIVITY_AGENT_PORT = 8132;
const KUBELET_CREDENTIALS = '/var/lib/kubelet/pki/kubelet-client-current.pem';
const CA = '/etc/kubernetes/pki/ca.crt';

/** Where test/real/build.sh leaves Konnectivity. */
export const KONNECTIVITY_DIR = join(process.env.EDGEADM_RIG_CACHE ?? '/var/cache/edgeadm-rig', 'out', 'konnectivity');

/** What the benchmark drives: the cluster, its edge node and a pod on it. */
export interface BenchCluster {
  cluster: RealCluster;
  edge: TestHost;
  pod: string;
  /** Runs the rig's kubectl; its exit code and output. */
  kubectl(args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }>;
}

/** The processes in the middle of a path, whose CPU is the path's cost (none for direct). */
export interface TunnelProcesses {
  /** On the control plane. */
  server: () => Promise<number[]>;
  /** On the edge node. */
  agent: () => Promise<number[]>;
}

/** A path in use; `stop` undoes what `use` started (not the API server's configuration). */
export interface ActivePath {
  name: PathName;
  processes?: TunnelProcesses;
  stop(): Promise<void>;
}

function egressFile(protocol: 'GRPC' | 'HTTPConnect', socket: string): string {
  return [
    'apiVersion: apiserver.k8s.io/v1beta1',
    'kind: EgressSelectorConfiguration',
    'egressSelections:',
    '- name: cluster',
    '  connection:',
    `    proxyProtocol: ${protocol}`,
    '    transport:',
    '      uds:',
    `        udsName: ${socket}`,
    '',
  ].join('\n');
}

/** Writes `content` to `path` on `host` (through a temporary file in the same directory, then a rename). */
async function writeOn(bench: BenchCluster, host: TestHost, path: string, content: string): Promise<void> {
  const encoded = Buffer.from(content).toString('base64');
  await bench.cluster.hosts.run(
    host,
    `set -e; tmp=${EGRESS_DIR}/.bench-write; echo '${encoded}' | base64 -d > $tmp; chmod 600 $tmp; mv -f $tmp ${path}`,
  );
}

/** The API server's manifest with the egress selector flag pointing at `config`, or without it. */
function manifestWith(original: string, config: string | undefined): string {
  const flag = /^(\s*)- --egress-selector-config-file=\S+\n/m;
  if (!flag.test(original)) throw new Error(`the API server's manifest has no --egress-selector-config-file`);
  return original.replace(flag, (_line, indent: string) =>
    config === undefined ? '' : `${indent}- --egress-selector-config-file=${config}\n`,
  );
}

/** The pids of the processes on `host` whose comm is `comm`, in the host's own network namespace. */
export async function pidsOf(bench: BenchCluster, host: TestHost, comm: string): Promise<number[]> {
  const printed = await bench.cluster.hosts.run(
    host,
    `own=$(readlink /proc/self/ns/net); for p in /proc/[0-9]*; do c=; read -r c 2>/dev/null <"$p/comm"; if [ "$c" = ${comm} ] && [ "$(readlink "$p/ns/net" 2>/dev/null)" = "$own" ]; then echo "\${p#/proc/}"; fi; done`,
  );
  return printed.split('\n').filter(Boolean).map(Number);
}

/** A service's process and its children, from the direct service manager's pid file. */
async function servicePids(bench: BenchCluster, host: TestHost, unit: string): Promise<number[]> {
  const printed = await bench.cluster.hosts.run(
    host,
    `launcher=$(cat /var/lib/edgeadm/services/${unit}.pid); echo "$launcher"; pgrep -P "$launcher" || true`,
  );
  return printed.split('\n').filter(Boolean).map(Number);
}

async function startBackground(bench: BenchCluster, host: TestHost, command: string, log: string): Promise<number> {
  const pid = await bench.cluster.hosts.run(host, `setsid nohup ${command} >${log} 2>&1 </dev/null & echo $!`);
  return Number(pid.trim());
}

async function startKonnectivity(bench: BenchCluster, mode: 'grpc' | 'http-connect'): Promise<ActivePath> {
  const { cluster, edge } = bench;
  const controlPlane = cluster.controlPlane;
  const server = await startBackground(
    bench,
    controlPlane,
    [
      join(KONNECTIVITY_DIR, 'proxy-server'),
      `--mode=${mode}`,
      `--uds-name=${KONNECTIVITY_SOCKET}`,
      '--delete-existing-uds-file',
      '--server-port=0',
      `--agent-port=${KONNECTIVITY_AGENT_PORT}`,
      '--admin-port=8133',
      '--health-port=8134',
      '--cluster-cert=/etc/kubernetes/pki/apiserver.crt',
      '--cluster-key=/etc/kubernetes/pki/apiserver.key',
      `--cluster-ca-cert=${CA}`,
      '--server-count=1',
      '--proxy-strategies=destHost,default',
    ].join(' '),
    '/var/lib/edgeadm/bench-konnectivity-server.log',
  );
  const agent = await startBackground(
    bench,
    edge,
    [
      join(KONNECTIVITY_DIR, 'proxy-agent'),
      `--proxy-server-host=${controlPlane.address}`,
      `--proxy-server-port=${KONNECTIVITY_AGENT_PORT}`,
      `--ca-cert=${CA}`,
      `--agent-cert=${KUBELET_CREDENTIALS}`,
      `--agent-key=${KUBELET_CREDENTIALS}`,
      `--agent-identifiers=ipv4=${edge.address}`,
      `--agent-id=${edge.name}`,
      '--admin-server-port=8133',
      '--health-server-port=8134',
    ].join(' '),
    '/var/lib/edgeadm/bench-konnectivity-agent.log',
  );
  return {
    name: mode === 'grpc' ? 'konnectivity-grpc' : 'konnectivity-http-connect',
    processes: { server: async () => [server], agent: async () => [agent] },
    async stop() {
      // Gone before the next path (or reset's comparison) starts: TERM, then KILL after 5 s.
      const stop = (pid: number): string =>
        `kill ${pid} 2>/dev/null; i=0; while kill -0 ${pid} 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; kill -9 ${pid} 2>/dev/null || true`;
      await cluster.hosts.run(controlPlane, stop(server));
      await cluster.hosts.run(edge, stop(agent));
    },
  };
}

/** Keeps the manifest init wrote (once), so every switch starts from it. */
async function originalManifest(bench: BenchCluster): Promise<string> {
  const { hosts, controlPlane } = bench.cluster;
  return hosts.run(
    controlPlane,
    `[ -f ${ORIGINAL_MANIFEST} ] || cp -p ${MANIFEST} ${ORIGINAL_MANIFEST}; cat ${ORIGINAL_MANIFEST}`,
  );
}

/**
 * Points the API server at `name`'s path and waits until the new API server
 * runs with it and an exec reaches the edge pod through it.
 */
export async function usePath(bench: BenchCluster, name: PathName): Promise<ActivePath> {
  const { cluster } = bench;
  const controlPlane = cluster.controlPlane;
  const original = await originalManifest(bench);
  let path: ActivePath;
  let config: string | undefined;
  if (name === 'direct') {
    path = { name, stop: async () => undefined };
  } else if (name === 'node-tunnel') {
    config = EGRESS_CONFIG_PATH;
    path = {
      name,
      processes: {
        server: () => servicePids(bench, controlPlane, 'edgeadm-node-tunnel-server.service'),
        agent: () => servicePids(bench, bench.edge, 'edgeadm-node-tunnel.service'),
      },
      stop: async () => undefined,
    };
  } else {
    const mode = name === 'konnectivity-grpc' ? 'grpc' : 'http-connect';
    config = `${EGRESS_DIR}/bench-konnectivity-${mode}.yaml`;
    await writeOn(
      bench,
      controlPlane,
      config,
      egressFile(mode === 'grpc' ? 'GRPC' : 'HTTPConnect', KONNECTIVITY_SOCKET),
    );
    path = await startKonnectivity(bench, mode);
  }
  const before = await pidsOf(bench, controlPlane, 'kube-apiserver');
  const manifest = manifestWith(original, config);
  // The same manifest again would not restart the API server: then the running one is the one to wait for.
  const isChanged = (await cluster.hosts.run(controlPlane, `cat ${MANIFEST}`)) !== manifest;
  if (isChanged) await writeOn(bench, controlPlane, MANIFEST, manifest);
  await waitUntil(`the API server on the ${name} path`, 240_000, async () => {
    const now = await pidsOf(bench, controlPlane, 'kube-apiserver');
    if (now.length !== 1 || (isChanged && before.includes(now[0]!))) return false;
    const cmdline = await cluster.hosts.run(controlPlane, `tr '\\0' ' ' </proc/${now[0]}/cmdline`);
    const hasFlag = cmdline.includes('--egress-selector-config-file=');
    if (config === undefined ? hasFlag : !cmdline.includes(`--egress-selector-config-file=${config}`)) return false;
    const probe = await bench.kubectl(['exec', bench.pod, '--', 'true']);
    return probe.exitCode === 0;
  });
  return path;
}

async function waitUntil(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(1_000);
  }
}
