/**
 * The main job on the real rig: `init` a kubeadm control plane, `join` two
 * edge nodes with `--enable-edge`, a Deployment whose pods run real
 * containers on the edge nodes, `kubectl logs` and `kubectl exec` into them,
 * then `reset` every host and check each is as before. Run by the edgeadm
 * CLI (bin/run.js or the single binary) over real SSH, exactly as an
 * operator types it; the cluster is upstream Kubernetes built from its own
 * module (./rig.ts). Shared by the real suite and `npm run demo -- --real`.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join as joinPath } from 'node:path';
import { execa } from 'execa';
import type { TestHost, TestHosts } from '../test-hosts.js';
import { hostSnapshot, prepareRigHosts, snapshotDifference } from './cluster-hosts.js';
import { builtSet, chrootReason, RIG_WORKLOAD_IMAGE, rigKubeadmPackage } from './rig.js';

/** How the main job reports what it does: a heading and the command, then the command's output. */
export interface MainJobReporter {
  step(title: string, commandLine: string): void;
  output(text: string): void;
}

/** What the real main job saw, for a test to assert on. */
export interface RealMainJobResult {
  kubernetesVersion: string;
  /** `kubectl get nodes -o wide` as printed. */
  nodesWide: string;
  nodes: Array<{ name: string; isReady: boolean; kubeletVersion: string; isEdge: boolean }>;
  /** The pods of the test Deployment: name, node and UID. */
  pods: Array<{ name: string; node: string; uid: string }>;
  /** What `kubectl logs` printed of the first pod. */
  logs: string;
  /** What `kubectl exec` printed from inside the first pod. */
  execOutput: string;
  /** Per host, what differs from before init once reset ran (empty: as before). */
  leftovers: Record<string, string[]>;
  /** Seconds: init, each join (to node Ready), the whole job. */
  seconds: { init: number; joins: number[]; total: number };
}

/**
 * The line `kubectl exec` prints when it runs inside the pod `pod`: its hostname, and its PID 1's
 * command, which is the container's own `/bin/sh`. A hostname alone proves little (the UTS namespace
 * is joined first); a runtime that misses the pod's mount and PID namespaces prints the machine's
 * PID 1 instead (scripts/fresh-root.sh under chroot printed `/process_api--firec`).
 */
export function lineFromInsidePod(pod: string): string {
  return `written from inside ${pod}: /bin/sh`;
}

/** What the test workload asks of Kubernetes beyond running. */
export interface WorkloadOptions {
  /** Evict the pods this long after their node becomes unreachable (Kubernetes' default is 300 s). */
  unreachableTolerationSeconds?: number;
  /**
   * No service account token volume. A kubelet restarted while its node is
   * cut off cannot mount one: it asks the API server for a new token
   * (TokenRequest), which the edge-proxy cannot answer offline (test/real/README.md).
   */
  isWithoutServiceAccountToken?: boolean;
}

/** The test workload: busybox printing a line with its node's name, then ticking. */
export function edgeWorkload(name: string, options: WorkloadOptions = {}): object {
  const asked =
    options.unreachableTolerationSeconds === undefined
      ? []
      : [
          {
            key: 'node.kubernetes.io/unreachable',
            operator: 'Exists',
            effect: 'NoExecute',
            tolerationSeconds: options.unreachableTolerationSeconds,
          },
        ];
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default' },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { 'edgeadm.io/edge': 'true' },
          tolerations: [{ key: 'edgeadm.io/edge', operator: 'Exists', effect: 'NoSchedule' }, ...asked],
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: 'kubernetes.io/hostname',
              whenUnsatisfiable: 'DoNotSchedule',
              labelSelector: { matchLabels: { app: name } },
            },
          ],
          terminationGracePeriodSeconds: 2,
          ...(options.isWithoutServiceAccountToken ? { automountServiceAccountToken: false } : {}),
          containers: [
            {
              name: 'main',
              image: RIG_WORKLOAD_IMAGE,
              imagePullPolicy: 'Never',
              env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
              command: [
                '/bin/sh',
                '-c',
                'echo "hello from pod $(hostname) on node $NODE_NAME"; while :; do sleep 5; done',
              ],
            },
          ],
        },
      },
    },
  };
}

/** A real cluster on the rig's hosts, up and joined, with the means to drive it. */
export interface RealCluster {
  hosts: TestHosts;
  controlPlane: TestHost;
  edges: TestHost[];
  kubernetesVersion: string;
  /** The admin kubeconfig init wrote. */
  kubeconfig: string;
  /** Runs the rig's kubectl (same version as the cluster); throws on failure. With a title, reported. */
  kubectl(args: string[], title?: string): Promise<string>;
  /** Runs edgeadm as the operator: its stdout (with `all`, stdout and stderr as printed); throws with its output on failure. */
  edgeadm(title: string, args: string[], options?: { all?: boolean }): Promise<string>;
  /** The SSH flags that reach `host`. */
  ssh(host: TestHost): string[];
  /** Joins `node` as an edge node (the join command init printed), with `flags` added. */
  join(node: TestHost, flags?: string[]): Promise<void>;
  /** Each host as it was before init. */
  before: Map<string, Record<string, string>>;
  seconds: { init: number; joins: number[] };
}

/** Options of {@link startRealCluster}. */
export interface RealClusterOptions {
  hosts: TestHosts;
  /** The edgeadm to run: a program and its leading arguments (`node bin/run.js`, or the single binary). */
  edgeadm: [string, string[]];
  reporter?: MainJobReporter;
  /** Extra flags for init (`--autonomy-duration 10m`). */
  initFlags?: string[];
  /** Extra flags for one edge node's join (`--site shop-a`); undefined: not joined now ({@link RealCluster.join} later). All joined without it. */
  joinFlags?: (node: TestHost, index: number) => string[] | undefined;
}

/** init (kubeadm, --enable-edge) on the first host and join --enable-edge of the others; every node Ready. */
export async function startRealCluster(options: RealClusterOptions): Promise<RealCluster> {
  const chrooted = chrootReason();
  if (chrooted) throw new Error(`the real rig cannot run: ${chrooted}`);
  const { hosts } = options;
  const reporter = options.reporter ?? { step: () => undefined, output: () => undefined };
  const [controlPlane, ...edges] = hosts.targets as [TestHost, ...TestHost[]];
  const home = mkdtempSync(joinPath(hosts.dir, 'operator-'));
  const env = {
    HOME: home,
    EDGEADM_HOME: joinPath(home, '.edgeadm'),
    EDGEADM_SERVICE_MANAGER: 'direct',
    SSH_AUTH_SOCK: '',
  };
  const kubeconfig = joinPath(home, 'admin.yaml');
  const kubectlProgram = joinPath(builtSet('kubernetes').dir, 'kubectl');
  const ssh = (host: TestHost): string[] => [
    '--host',
    `root@${host.address}`,
    '--ssh-key',
    hosts.keys.root,
    '--ssh-known-hosts',
    hosts.knownHostsFile,
  ];
  const edgeadm = async (title: string, args: string[], printed: { all?: boolean } = {}): Promise<string> => {
    reporter.step(title, `edgeadm ${args.join(' ')}`);
    const result = await execa(options.edgeadm[0], [...options.edgeadm[1], ...args], { env, all: true, reject: false });
    reporter.output(result.all ?? '');
    if (result.exitCode !== 0) throw new Error(`edgeadm ${args[0]} failed (${result.exitCode}):\n${result.all}`);
    return printed.all ? (result.all ?? '') : result.stdout;
  };
  const kubectl = async (args: string[], title?: string): Promise<string> => {
    if (title) reporter.step(title, `kubectl ${args.join(' ')}`);
    const result = await execa(kubectlProgram, ['--kubeconfig', kubeconfig, ...args], { all: true, reject: false });
    if (title) reporter.output(result.all ?? '');
    if (result.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${result.exitCode}):\n${result.all}`);
    return result.stdout;
  };

  const pkg = await rigKubeadmPackage();
  await prepareRigHosts(hosts);
  const before = new Map<string, Record<string, string>>();
  for (const host of hosts.targets) before.set(host.name, await hostSnapshot(hosts, host));

  const initStarted = Date.now();
  const printed = await edgeadm('init the control plane (kubeadm)', [
    'init',
    ...ssh(controlPlane),
    '--distribution',
    'kubeadm',
    '--enable-edge',
    '--install-pkg-path',
    pkg.file,
    '--kubeconfig-out',
    kubeconfig,
    ...(options.initFlags ?? []),
  ]);
  const initSeconds = (Date.now() - initStarted) / 1000;
  const joinLine = /^\s*(edgeadm join \S.*)$/m.exec(printed)?.[1];
  if (joinLine === undefined) throw new Error(`init printed no join command:\n${printed}`);
  const joinArgs = joinLine.trim().split(/\s+/).slice(1);
  await setRigKubeProxyConntrack(kubectl, hosts.dir);
  const join = async (node: TestHost, flags: string[] = []): Promise<void> => {
    // The printed command names the package and --enable-edge when init had them; they are added only if not.
    const args = [...joinArgs, ...ssh(node), ...flags];
    if (!args.includes('--install-pkg-path')) args.push('--install-pkg-path', pkg.file);
    if (!args.includes('--enable-edge')) args.push('--enable-edge');
    await edgeadm(`join ${node.name} as an edge node`, args);
  };
  const joins: number[] = [];
  for (const [index, node] of edges.entries()) {
    const flags = options.joinFlags ? options.joinFlags(node, index) : [];
    if (flags === undefined) continue;
    const joinStarted = Date.now();
    await join(node, flags);
    joins.push((Date.now() - joinStarted) / 1000);
  }
  return {
    hosts,
    controlPlane,
    edges,
    kubernetesVersion: pkg.kubernetesVersion,
    kubeconfig,
    kubectl,
    edgeadm,
    ssh,
    join,
    before,
    seconds: { init: initSeconds, joins },
  };
}

/**
 * A rig setting (test/real/README.md): kube-proxy leaves the conntrack
 * table's size and TCP timeouts as they are. It sets them by default, and
 * `nf_conntrack_max` can only be written from the machine's first network
 * namespace, which a test host is not: kube-proxy would exit ("open
 * /proc/sys/net/netfilter/nf_conntrack_max: permission denied") and no
 * Service would work. An operator's node is its machine's first namespace.
 * Both kube-proxy configurations (kubeadm's, and edgeadm's for edge nodes)
 * are changed and kubeadm's pod restarted; the edge nodes join afterwards.
 */
async function setRigKubeProxyConntrack(kubectl: (args: string[]) => Promise<string>, dir: string): Promise<void> {
  for (const name of ['kube-proxy', 'kube-proxy-edge']) {
    const configMap = JSON.parse(await kubectl(['-n', 'kube-system', 'get', 'configmap', name, '-o', 'json'])) as {
      data: Record<string, string>;
    };
    configMap.data['config.conf'] = configMap.data['config.conf']!.replace(/^(\s+maxPerCore:).*$/m, '$1 0')
      .replace(/^(\s+tcpCloseWaitTimeout:).*$/m, '$1 0s')
      .replace(/^(\s+tcpEstablishedTimeout:).*$/m, '$1 0s');
    const file = joinPath(dir, `${name}-configmap.json`);
    writeFileSync(file, JSON.stringify(configMap));
    await kubectl(['replace', '-f', file]);
  }
  await kubectl(['-n', 'kube-system', 'delete', 'pod', '-l', 'k8s-app=kube-proxy', '--wait=false']);
}

/** reset of every host (edge nodes first), then what differs on each from before init. */
export async function resetRealCluster(cluster: RealCluster): Promise<Record<string, string[]>> {
  for (const host of [...cluster.edges].reverse()) {
    await cluster.edgeadm(`reset ${host.name}`, ['reset', ...cluster.ssh(host), '--force']);
  }
  await cluster.edgeadm(`reset ${cluster.controlPlane.name}`, [
    'reset',
    ...cluster.ssh(cluster.controlPlane),
    '--force',
  ]);
  const leftovers: Record<string, string[]> = {};
  for (const host of cluster.hosts.targets) {
    leftovers[host.name] = snapshotDifference(cluster.before.get(host.name)!, await hostSnapshot(cluster.hosts, host));
  }
  return leftovers;
}

/** Runs the main job; throws with the command's output when a step fails. */
export async function runRealMainJob(options: RealClusterOptions): Promise<RealMainJobResult> {
  const started = Date.now();
  const cluster = await startRealCluster(options);
  const { kubectl } = cluster;
  const nodesWide = await kubectl(['get', 'nodes', '-o', 'wide'], 'the nodes, through the real kubectl');
  const nodeList = JSON.parse(await kubectl(['get', 'nodes', '-o', 'json'])) as {
    items: Array<{
      metadata: { name: string; labels?: Record<string, string> };
      status: { nodeInfo: { kubeletVersion: string }; conditions: Array<{ type: string; status: string }> };
    }>;
  };
  const nodes = nodeList.items.map((node) => ({
    name: node.metadata.name,
    isReady: node.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
    kubeletVersion: node.status.nodeInfo.kubeletVersion,
    isEdge: node.metadata.labels?.['edgeadm.io/edge'] === 'true',
  }));
  const pods = await runEdgeWorkload(cluster, 'hello-edge');
  const first = pods[0]?.name ?? 'none';
  const logs = await kubectl(['logs', first], 'a line the pod wrote (kubectl logs)');
  const execOutput = await kubectl(
    [
      'exec',
      first,
      '--',
      '/bin/sh',
      '-c',
      'echo "written from inside $(hostname): $(cat /proc/1/cmdline | head -c 20)"',
    ],
    'a line from inside the running pod (kubectl exec)',
  );
  const leftovers = await resetRealCluster(cluster);
  return {
    kubernetesVersion: cluster.kubernetesVersion,
    nodesWide,
    nodes,
    pods,
    logs,
    execOutput,
    leftovers,
    seconds: { ...cluster.seconds, total: (Date.now() - started) / 1000 },
  };
}

/** Applies {@link edgeWorkload} and waits until its pods run; their names and nodes. */
export async function runEdgeWorkload(
  cluster: RealCluster,
  name: string,
  options: WorkloadOptions = {},
): Promise<Array<{ name: string; node: string; uid: string }>> {
  const { kubectl } = cluster;
  const workload = joinPath(cluster.hosts.dir, `${name}.json`);
  writeFileSync(workload, JSON.stringify(edgeWorkload(name, options)));
  await kubectl(['apply', '-f', workload], 'a Deployment whose pods run on the edge nodes');
  await kubectl(['rollout', 'status', `deployment/${name}`, '--timeout=300s'], 'wait until its pods run');
  await kubectl(['get', 'pods', '-l', `app=${name}`, '-o', 'wide'], 'where they run');
  const podList = JSON.parse(await kubectl(['get', 'pods', '-l', `app=${name}`, '-o', 'json'])) as {
    items: Array<{ metadata: { name: string; uid: string }; spec: { nodeName: string } }>;
  };
  return podList.items.map((pod) => ({ name: pod.metadata.name, node: pod.spec.nodeName, uid: pod.metadata.uid }));
}
