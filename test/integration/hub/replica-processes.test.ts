/**
 * Hub replicas as real processes: three `edgeadm hub serve --store etcd`
 * processes (bin/run.js) on a REAL three-member etcd (Debian's
 * etcd-server, test/support/etcd-cluster.ts), edge clusters whose agents are
 * real `register-cloud --foreground` processes spread over the three
 * replicas, SIMULATED API servers, and the real kubectl.
 *
 * A replica's death here is a SIGKILL of its process: nothing is drained or
 * withdrawn, its lease in etcd runs out by itself, its agents find the
 * other replicas on their own.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEncryptionKeyFileText } from '../../../src/hub/store/etcd/encryption.js';
import { HUB_ADMIN_USER } from '../../../src/hub/identity/authenticate.js';
import { loadHubConfig } from '../../../src/hub/contract/hub-config.js';
import type { RolloutStatusView } from '../../../src/rollout/api.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import {
  freshEtcdPrefix,
  hubEtcdStoreFlags,
  startEtcdCluster,
  type EtcdTestCluster,
} from '../../support/etcd-cluster.js';
import {
  freePort,
  hubJson,
  kubectlVia,
  startCli,
  startEdgeCluster,
  waitFor,
  type BackgroundCli,
  type EdgeCluster,
} from './hub-fixture.js';

/** One `hub serve` process. */
interface ReplicaProcess {
  cli: BackgroundCli;
  port: number;
  /** The admin.yaml this replica wrote, naming itself. */
  config: string;
  id: string;
}

interface ReplicaListing {
  replicas: { id: string; tunnels: number; isLeader?: boolean; advertiseUrl: string }[];
}

const POD = 'web-0';

/** A Rollout of a ConfigMap and a Deployment, in three waves (1, then up to 3, then the rest), each soaking. */
function threeWaveRollout(name: string, soakSeconds: number): Record<string, unknown> {
  return {
    apiVersion: 'edgeadm.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name },
    spec: {
      placement: { clusterSelector: 'env=shops' },
      resources: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shops' } },
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `${name}-site`, namespace: 'shops' },
          data: { site: '${cluster.name}' },
        },
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name, namespace: 'shops' },
          spec: {
            replicas: 1,
            selector: { matchLabels: { app: name } },
            template: {
              metadata: { labels: { app: name } },
              spec: { containers: [{ name: 'web', image: 'registry.example/web:1' }] },
            },
          },
        },
      ],
      strategy: { waves: [1, 3, '100%'], maxUnavailable: '100%', failureBudget: 0, soakSeconds, deadlineSeconds: 120 },
    },
  };
}

describe('hub replicas as processes on a real three-member etcd', () => {
  const root = mkdtempSync(join(tmpdir(), 'edgeadm-replica-processes-'));
  let etcd: EtcdTestCluster;
  const replicas: ReplicaProcess[] = [];
  const clusters: EdgeCluster[] = [];
  /** Which replica each cluster's agent dialled first (and is held by after registration). */
  const homeOf = new Map<string, ReplicaProcess>();
  let caPem: string;
  let adminToken: string;

  /** One HTTPS request to a replica as the admin. */
  const adminRequest = (port: number, path: string): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path,
          ca: caPem,
          agent: false,
          timeout: 10_000,
          headers: { authorization: `Bearer ${adminToken}` },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', reject);
      req.end();
    });

  const live = (): ReplicaProcess[] => replicas.filter((r) => r.cli.process.exitCode === null && !r.cli.process.killed);

  const listing = async (via: ReplicaProcess): Promise<ReplicaListing> => {
    const answer = await adminRequest(via.port, '/hub/v1/replicas');
    if (answer.status !== 200) throw new Error(`replicas: ${answer.status} ${answer.body}`);
    return JSON.parse(answer.body) as ReplicaListing;
  };

  /** The rollout's status from whichever live replica leads (the others answer 503). */
  const rolloutStatus = async (name: string): Promise<RolloutStatusView | undefined> => {
    for (const replica of live()) {
      const answer = await adminRequest(replica.port, `/hub/v1/rollouts/${name}?clusters=true`).catch(() => undefined);
      if (answer?.status === 200) return JSON.parse(answer.body) as RolloutStatusView;
    }
    return undefined;
  };

  const startReplica = async (options: { encryptionKeyFile: string; prefix: string }): Promise<ReplicaProcess> => {
    const port = await freePort();
    const dataDir = mkdtempSync(join(root, 'replica-'));
    const cli = startCli([
      'hub',
      'serve',
      '--listen',
      `127.0.0.1:${port}`,
      '--data-dir',
      dataDir,
      '--store',
      'etcd',
      ...hubEtcdStoreFlags(etcd, { encryptionKeyFile: options.encryptionKeyFile, keyPrefix: options.prefix }),
    ]);
    await cli.waitForOutput(/hub CA pin: sha256:[0-9a-f]{64}/);
    const config = join(dataDir, 'admin.yaml');
    caPem = loadHubConfig(config).caPem;
    adminToken = loadHubConfig(config).token;
    const replica: ReplicaProcess = { cli, port, config, id: '' };
    // This replica's id: the one listed that the replicas started before it are not.
    const known = new Set(replicas.map((r) => r.id));
    const fresh = (await listing(replica)).replicas.map((r) => r.id).filter((id) => !known.has(id));
    expect(fresh).toHaveLength(1);
    replica.id = fresh[0]!;
    return replica;
  };

  /** Registers a cluster whose agent dials `home` first, and waits until `home` holds its tunnel. */
  const register = async (name: string, home: ReplicaProcess, token: string, caPin: string): Promise<void> => {
    const cluster = await startEdgeCluster(name);
    cluster.api.setObject({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: POD, namespace: 'default' },
      spec: { containers: [{ name: 'web', image: 'nginx' }] },
    });
    // Each cluster's own RBAC decides; the rollout writes as the admin who applied it.
    cluster.api.setObject({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'hub-admin' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: HUB_ADMIN_USER }],
    });
    clusters.push(cluster);
    const ordered = [home, ...replicas.filter((r) => r !== home)];
    const heldBefore = (await listing(home)).replicas.find((r) => r.id === home.id)?.tunnels ?? 0;
    cluster.agent = startCli([
      'register-cloud',
      ordered.map((r) => `127.0.0.1:${r.port}`).join(','),
      '--token',
      token,
      '--hub-ca-cert-hash',
      caPin,
      '--name',
      name,
      '--labels',
      'env=shops',
      '--kubeconfig',
      cluster.kubeconfigPath,
      '--data-dir',
      cluster.dataDir,
      '--discovery-timeout',
      '3s',
      '--foreground',
    ]);
    await waitFor(`cluster ${name} held by replica ${home.id}`, async () => {
      if (cluster.agent!.process.exitCode !== null) throw new Error(`the agent exited:\n${cluster.agent!.output()}`);
      const held = (await listing(home)).replicas.find((r) => r.id === home.id)?.tunnels ?? 0;
      return held === heldBefore + 1 ? true : undefined;
    });
    homeOf.set(name, home);
  };

  beforeAll(async () => {
    ensureCliBuilt('index.js', ['src']);
    etcd = await startEtcdCluster();
    const encryptionKeyFile = join(root, 'encryption.key');
    writeFileSync(encryptionKeyFile, newEncryptionKeyFileText(), { mode: 0o600 });
    const prefix = freshEtcdPrefix();
    for (let i = 0; i < 3; i += 1) replicas.push(await startReplica({ encryptionKeyFile, prefix }));
    expect(new Set(replicas.map((r) => r.id)).size).toBe(3);
    const caPin = /hub CA pin: (sha256:[0-9a-f]{64})/.exec(replicas[0]!.cli.output())![1]!;
    const token = (await hubJson<{ token: string }>(['hub', 'token', 'create'], replicas[0]!.config)).token;
    const leaderId = (await listing(replicas[0]!)).replicas.find((r) => r.isLeader === true)?.id;
    const leader = replicas.find((r) => r.id === leaderId)!;
    const [first, second] = replicas.filter((r) => r !== leader) as [ReplicaProcess, ReplicaProcess];
    // In name order (the waves' order): wave 0 is held by a replica that does not lead; waves 1 and 2
    // each have a cluster on the leader (they move when it dies) and one on another replica.
    const plan: [string, ReplicaProcess][] = [
      ['shop-a', first],
      ['shop-b', leader],
      ['shop-c', second],
      ['shop-d', leader],
      ['shop-e', first],
    ];
    for (const [name, home] of plan) await register(name, home, token, caPin);
  }, 300_000);

  afterAll(async () => {
    await Promise.all(clusters.map((cluster) => cluster.agent?.stop()));
    await Promise.all(replicas.map((replica) => replica.cli.stop()));
    await etcd?.stop();
    for (const cluster of clusters) await cluster.api.stop();
  });

  it('continues a rollout in waves on another replica when the leading one is SIGKILLed, on every cluster', async () => {
    const before = await listing(replicas[0]!);
    const leader = replicas.find((r) => r.id === before.replicas.find((l) => l.isLeader === true)?.id)!;
    expect(before.replicas.map((r) => r.tunnels).sort()).toEqual([1, 2, 2]);
    const file = join(root, 'shops.yaml');
    writeFileSync(file, dump(threeWaveRollout('shops', 8)));
    await hubJson(['hub', 'rollout', 'apply', '-f', file], leader.config);
    // Wave 0 (shop-a, held by a replica that does not lead) ready and soaking: its copy went through the
    // peer path to its replica, and its report came back through it.
    const soaking = await waitFor('wave 0 ready on a cluster the leader does not hold', async () => {
      const view = await rolloutStatus('shops');
      return view?.waves[0]?.state === 'soaking' ? view : undefined;
    });
    expect(soaking.currentWave).toBe(0);
    expect(soaking.clusters?.find((row) => row.cluster === 'shop-a')?.phase).toBe('ready');
    expect(homeOf.get('shop-a')).not.toBe(leader);

    // The leader dies in the middle of the rollout: SIGKILL, nothing withdrawn.
    leader.cli.process.kill('SIGKILL');
    await leader.cli.process;
    expect(leader.cli.process.signalCode).toBe('SIGKILL');

    const done = await waitFor('the rollout complete on a surviving replica', async () => {
      const view = await rolloutStatus('shops');
      return view?.state === 'complete' ? view : undefined;
    });
    expect(done.revision).toBe(soaking.revision);
    expect(done.clusters?.map((row) => `${row.cluster}=${row.phase}`)).toEqual(clusters.map((c) => `${c.name}=ready`));
    for (const cluster of clusters) {
      const applied = cluster.api.getObject({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: 'shops',
        name: 'shops-site',
      });
      expect(applied?.data, cluster.name).toEqual({ site: cluster.name });
    }
    const survivors = live();
    const after = await listing(survivors[0]!);
    expect(after.replicas.map((r) => r.id).sort()).toEqual(survivors.map((r) => r.id).sort());
    expect(after.replicas.filter((r) => r.isLeader === true)).toHaveLength(1);
    // The dead leader's clusters (shop-b, shop-d) are held by the survivors now.
    expect(after.replicas.reduce((sum, r) => sum + r.tunnels, 0)).toBe(clusters.length);
  }, 300_000);

  it('brings the agents of a SIGKILLed replica back on the others under kubectl load, every cluster reachable, no registration lost', async () => {
    const [victim, survivor] = live() as [ReplicaProcess, ReplicaProcess];
    expect(survivor).toBeDefined();
    const victimTunnels = (await listing(survivor)).replicas.find((r) => r.id === victim.id)?.tunnels ?? 0;
    expect(victimTunnels).toBeGreaterThan(0);
    // kubectl keeps reading every cluster through the survivor while the victim dies.
    let isLoading = true;
    const outcomes: { cluster: string; ok: boolean }[] = [];
    const load = (async () => {
      while (isLoading) {
        for (const cluster of clusters) {
          const result = await kubectlVia(survivor.config, cluster.name, ['get', 'pods', '-o', 'name']);
          outcomes.push({ cluster: cluster.name, ok: result.stdout.includes(`pod/${POD}`) });
        }
      }
    })();
    await waitFor('kubectl answered through the survivor', () => (outcomes.some((o) => o.ok) ? true : undefined));
    victim.cli.process.kill('SIGKILL');
    await victim.cli.process;
    await waitFor('every cluster held by the survivor', async () => {
      const held = (await listing(survivor)).replicas;
      return held.length === 1 && held[0]?.tunnels === clusters.length ? true : undefined;
    });
    const sinceBack = outcomes.length;
    await waitFor('a whole round of kubectl answered after the failover', () =>
      outcomes.length >= sinceBack + clusters.length ? true : undefined,
    );
    isLoading = false;
    await load;
    // After the failover every cluster answers, and none was ever lost from the store.
    for (const cluster of clusters) {
      const result = await kubectlVia(survivor.config, cluster.name, ['get', 'pods', '-o', 'name']);
      expect(result.stdout + result.stderr, cluster.name).toContain(`pod/${POD}`);
    }
    const registered = await hubJson<{ clusters: { name: string; state: string }[] }>(
      ['hub', 'clusters', 'list'],
      survivor.config,
    );
    expect(registered.clusters.map((c) => `${c.name}=${c.state}`).sort()).toEqual(
      clusters.map((c) => `${c.name}=Connected`),
    );
    expect(outcomes.filter((o) => o.ok).length).toBeGreaterThan(clusters.length);
  }, 300_000);
});
