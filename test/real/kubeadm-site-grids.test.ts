/**
 * Site grids on real Kubernetes (kubeadm v1.34 built from its module, real
 * kubelets, kube-proxy, containerd and runc): sites of edge nodes joined
 * with `--site`, one SiteGrid, one copy per site, traffic kept in the site.
 *
 * - Two sites of two edge nodes each, joined with `join --site`; `sites
 *   list` shows them.
 * - A grid of busybox httpd with a per-site override (replicas, and an env
 *   value each pod serves): the controller (`edgeadm agent
 *   site-grid-controller`, installed by init) makes one copy per site and
 *   writes per-site status.
 * - A client pod in each site calls the grid's Service (its ClusterIP, from
 *   the pod's own network namespace) 200 times and gets only its own site's
 *   pods: the node's kube-proxy (kube-proxy-edge, through the edge-proxy)
 *   holds only its site's endpoints.
 * - A third site appears (a node joins with `--site`) and gets its copy;
 *   the time from its node Ready to its copy answering the grid's Service
 *   on that node is printed (BENCHMARKS.md).
 * - A site is cut off from the control plane (an `unreachable` route on
 *   each of its nodes, as in kubeadm-autonomy.test.ts): its nodes go
 *   NotReady, its copy is left alone, and its clients are still served by
 *   their own site.
 * - A site is removed (its nodes reset and deleted): its copy is deleted.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRealCluster, type RealCluster } from '../support/real/main-job.js';
import { realEdgeadm, RIG_WORKLOAD_IMAGE } from '../support/real/rig.js';
import { waitFor as waitForRig } from '../support/real/wait.js';
import { startTestHosts, type TestHost, type TestHosts } from '../support/test-hosts.js';

/** Bound on one thing the cluster does (the node lifecycle controller's grace period is 50 s; two busy cores). */
const EVENT_TIMEOUT_MS = 5 * 60_000;
/** Calls each client makes. */
const CALLS = 200;

const waitFor = <T>(what: string, check: () => Promise<T | undefined>, intervalMs = 2_000): Promise<T> =>
  waitForRig(what, check, { timeoutMs: EVENT_TIMEOUT_MS, intervalMs });

/** The grid: busybox httpd answering "<greeting> <pod name>"; site shop-a runs two pods and greets differently. */
function menuGrid(): object {
  return {
    apiVersion: 'edgeadm.io/v1alpha1',
    kind: 'SiteGrid',
    metadata: { name: 'menu', namespace: 'default' },
    spec: {
      workload: {
        kind: 'Deployment',
        replicas: 1,
        template: {
          metadata: { labels: { app: 'menu' } },
          spec: {
            terminationGracePeriodSeconds: 2,
            containers: [
              {
                name: 'web',
                image: RIG_WORKLOAD_IMAGE,
                imagePullPolicy: 'Never',
                env: [{ name: 'GREETING', value: 'hello' }],
                command: [
                  '/bin/sh',
                  '-c',
                  'mkdir -p /www && echo "$GREETING $(hostname)" > /www/index.html && exec httpd -f -p 8080 -h /www',
                ],
                readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 2 },
              },
            ],
          },
        },
      },
      service: { ports: [{ port: 80, targetPort: 8080 }] },
      overrides: [
        { sites: ['shop-a'], replicas: 2, env: [{ name: 'GREETING', value: 'bonjour-a' }] },
        { sites: ['shop-b'], env: [{ name: 'GREETING', value: 'hallo-b' }] },
        { sites: ['shop-c'], env: [{ name: 'GREETING', value: 'ciao-c' }] },
      ],
    },
  };
}

/** A pod that only sleeps, on a site's nodes: the client whose network namespace calls the Service. */
function clientPod(site: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `client-${site}`, namespace: 'default', labels: { app: 'client' } },
    spec: {
      nodeSelector: { 'edgeadm.io/site': site },
      tolerations: [{ key: 'edgeadm.io/edge', operator: 'Exists', effect: 'NoSchedule' }],
      terminationGracePeriodSeconds: 1,
      automountServiceAccountToken: false,
      containers: [
        {
          name: 'main',
          image: RIG_WORKLOAD_IMAGE,
          imagePullPolicy: 'Never',
          command: ['/bin/sh', '-c', 'exec sleep 86400'],
        },
      ],
    },
  };
}

interface SiteGridStatus {
  sites?: Array<{ site: string; state: string; readyReplicas: number; replicas: number }>;
}

describe('site grids on real kubeadm, kubelets and kube-proxy', () => {
  let hosts: TestHosts;
  let cluster: RealCluster;
  let edges: TestHost[];
  let clusterIp: string;
  const siteOf = new Map<string, string>();
  const json = async <T>(args: string[]): Promise<T> => JSON.parse(await cluster.kubectl([...args, '-o', 'json'])) as T;
  const apply = async (name: string, object: object): Promise<void> => {
    const file = join(hosts.dir, `${name}.json`);
    writeFileSync(file, JSON.stringify(object));
    await cluster.kubectl(['apply', '-f', file]);
  };
  const gridStatus = async (): Promise<SiteGridStatus> =>
    (await json<{ status?: SiteGridStatus }>(['get', 'sitegrid', 'menu'])).status ?? {};
  const podsOfSite = async (site: string): Promise<string[]> =>
    (
      await json<{ items: Array<{ metadata: { name: string } }> }>([
        'get',
        'pods',
        '-l',
        `edgeadm.io/site-grid=menu,edgeadm.io/site=${site}`,
      ])
    ).items.map((pod) => pod.metadata.name);
  /** The network namespace of a pod on `host`, by its sandbox's CRI labels. */
  const podNetns = async (host: TestHost, podName: string): Promise<string> => {
    const ctr = 'ctr --address /run/containerd/containerd.sock -n k8s.io';
    const found = await hosts.run(
      host,
      `for id in $(${ctr} containers ls -q); do info=$(${ctr} containers info "$id"); if echo "$info" | grep -q '"io.kubernetes.pod.name": "${podName}"'; then echo "$info" | grep -o '/var/run/netns/[^"]*' | head -1; fi; done | head -1`,
    );
    if (!found.trim()) throw new Error(`no network namespace found for ${podName} on ${host.name}`);
    return found.trim();
  };
  /** `calls` GETs of the grid's Service from inside a pod's network namespace (a client in its site); the answers. */
  const callFromPod = async (host: TestHost, podName: string, calls: number): Promise<string[]> => {
    const netns = await podNetns(host, podName);
    const out = await hosts.run(
      host,
      `for i in $(seq ${calls}); do nsenter --net=${netns} wget -q -T 3 -O - http://${clusterIp}/ 2>/dev/null || echo FAILED; done`,
    );
    return out.split('\n').filter(Boolean);
  };
  const nodeReadyStatus = async (name: string): Promise<{ status: string; since: string } | undefined> => {
    const node = await json<{
      status: { conditions: Array<{ type: string; status: string; lastTransitionTime: string }> };
    }>(['get', 'node', name]);
    const ready = node.status.conditions.find((c) => c.type === 'Ready');
    return ready ? { status: ready.status, since: ready.lastTransitionTime } : undefined;
  };

  beforeAll(async () => {
    hosts = await startTestHosts({ count: 6, cgroups: true });
    const sites = ['shop-a', 'shop-a', 'shop-b', 'shop-b'];
    cluster = await startRealCluster({
      hosts,
      edgeadm: realEdgeadm(),
      joinFlags: (_node, index) => (sites[index] === undefined ? undefined : ['--site', sites[index]!]),
    });
    edges = cluster.edges;
    edges.forEach((node, index) => siteOf.set(node.name, sites[index] ?? 'shop-c'));
  });
  afterAll(async () => {
    await hosts?.teardown();
  });

  it('sites list shows each site with its nodes, all Ready', async () => {
    const listed = JSON.parse(
      await cluster.edgeadm('sites list', ['sites', 'list', '--kubeconfig', cluster.kubeconfig, '--json']),
    ) as { sites: Array<{ name: string; readyNodes: number; nodes: Array<{ name: string; isReady: boolean }> }> };
    expect(listed.sites.map((s) => [s.name, s.nodes.map((n) => n.name).sort(), s.readyNodes])).toEqual([
      ['shop-a', [edges[0]!.name, edges[1]!.name].sort(), 2],
      ['shop-b', [edges[2]!.name, edges[3]!.name].sort(), 2],
    ]);
  });

  it('a grid gets one copy per site, pinned to the site, with its override, and per-site status', async () => {
    await apply('menu-grid', menuGrid());
    const status = await waitFor('both copies Ready in the grid status', async () => {
      const current = await gridStatus();
      const ready = current.sites?.filter((s) => s.state === 'Ready') ?? [];
      return ready.length === 2 ? current : undefined;
    });
    expect(status.sites?.map((s) => [s.site, s.replicas, s.readyReplicas])).toEqual([
      ['shop-a', 2, 2],
      ['shop-b', 1, 1],
    ]);
    const pods = await json<{
      items: Array<{ metadata: { labels: Record<string, string> }; spec: { nodeName: string } }>;
    }>(['get', 'pods', '-l', 'edgeadm.io/site-grid=menu']);
    for (const pod of pods.items) expect(siteOf.get(pod.spec.nodeName)).toBe(pod.metadata.labels['edgeadm.io/site']);
    clusterIp = (await json<{ spec: { clusterIP: string } }>(['get', 'service', 'menu'])).spec.clusterIP;
  });

  it(`a client in each site calling the grid's Service ${CALLS} times reaches only its own site's pods`, async () => {
    await apply('client-a', clientPod('shop-a'));
    await apply('client-b', clientPod('shop-b'));
    await cluster.kubectl([
      'wait',
      '--for=condition=Ready',
      'pod/client-shop-a',
      'pod/client-shop-b',
      '--timeout=300s',
    ]);
    for (const [site, greeting] of [
      ['shop-a', 'bonjour-a'],
      ['shop-b', 'hallo-b'],
    ] as const) {
      const client = await json<{ spec: { nodeName: string } }>(['get', 'pod', `client-${site}`]);
      const host = edges.find((e) => e.name === client.spec.nodeName)!;
      const own = await podsOfSite(site);
      const answers = await callFromPod(host, `client-${site}`, CALLS);
      expect(answers).toHaveLength(CALLS);
      const served = new Set(answers);
      expect([...served].filter((answer) => !own.some((pod) => answer === `${greeting} ${pod}`))).toEqual([]);
    }
  });

  it('a third site appears (a node joins with --site) and gets its copy, serving on that node', async () => {
    const newNode = edges[4]!;
    await cluster.join(newNode, ['--site', 'shop-c']);
    const ready = await waitFor('the new node Ready', async () => {
      const current = await nodeReadyStatus(newNode.name);
      return current?.status === 'True' ? current : undefined;
    });
    const answer = await waitFor(
      "shop-c's copy answering the grid's Service on its node",
      async () => {
        const out = await hosts.run(newNode, `wget -q -T 2 -O - http://${clusterIp}/ 2>/dev/null || true`);
        return out.startsWith('ciao-c ') ? out.trim() : undefined;
      },
      500,
    );
    const seconds = (Date.now() - Date.parse(ready.since)) / 1000;
    console.log(`site grid: shop-c's node Ready at ${ready.since}; its copy served ${seconds.toFixed(1)} s later`);
    expect((await podsOfSite('shop-c')).map((pod) => `ciao-c ${pod}`)).toContain(answer);
  });

  it('a site cut off from the control plane keeps its copy and serves its own clients from its own pods', async () => {
    const siteA = edges.slice(0, 2);
    const before = await json<{ metadata: { uid: string } }>(['get', 'deployment', 'menu-shop-a']);
    for (const node of siteA) await hosts.run(node, `ip route add unreachable ${cluster.controlPlane.address}/32`);
    await waitFor('shop-a NotReady and Offline in the grid status', async () => {
      const states = await Promise.all(siteA.map((node) => nodeReadyStatus(node.name)));
      const offline = (await gridStatus()).sites?.find((s) => s.site === 'shop-a')?.state === 'Offline';
      return offline && states.every((s) => s?.status !== 'True') ? true : undefined;
    });
    const client = await json<{ spec: { nodeName: string } }>(['get', 'pod', 'client-shop-a']);
    const host = edges.find((e) => e.name === client.spec.nodeName)!;
    const own = await podsOfSite('shop-a');
    const answers = await callFromPod(host, 'client-shop-a', CALLS);
    expect(answers).toHaveLength(CALLS);
    expect([...new Set(answers)].filter((answer) => !own.some((pod) => answer === `bonjour-a ${pod}`))).toEqual([]);
    const after = await json<{ metadata: { uid: string; deletionTimestamp?: string } }>([
      'get',
      'deployment',
      'menu-shop-a',
    ]);
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(after.metadata.deletionTimestamp).toBeUndefined();
    for (const node of siteA) await hosts.run(node, `ip route del unreachable ${cluster.controlPlane.address}/32`);
    await waitFor('shop-a Ready again', async () => {
      const states = await Promise.all(siteA.map((node) => nodeReadyStatus(node.name)));
      return states.every((s) => s?.status === 'True') ? true : undefined;
    });
  });

  it('a site removed (its nodes reset and deleted) has its copy deleted', async () => {
    const siteB = edges.slice(2, 4);
    for (const node of siteB) {
      await cluster.edgeadm(`reset ${node.name}`, ['reset', ...cluster.ssh(node), '--force']);
      await cluster.kubectl(['delete', 'node', node.name]);
    }
    await waitFor("shop-b's workload and Service deleted", async () => {
      const left = await cluster.kubectl(['get', 'deployment,service', '-l', 'edgeadm.io/site=shop-b', '-o', 'name']);
      return left.trim() === '' ? true : undefined;
    });
    // The status is written after the deletions, in the same pass.
    const sites = await waitFor('the grid status without shop-b', async () => {
      const listed = (await gridStatus()).sites?.map((s) => s.site);
      return listed?.includes('shop-b') === false ? listed : undefined;
    });
    expect(sites).toEqual(['shop-a', 'shop-c']);
  });
});
