/**
 * The agents spread over the replicas again when a replica returns: two
 * replicas of one hub on a REAL three-member etcd (Debian's etcd-server,
 * test/support/etcd-cluster.ts), started in this process with short
 * rebalancing settings; the agents are real `register-cloud --foreground`
 * processes given both replicas' addresses; their API servers are
 * SIMULATED (test/support/sim-apiserver); the kubectl is the real one.
 *
 * Replica B's address is in every agent's list from the start, but B is
 * not running: every agent connects to A. One cluster has a kubectl watch
 * open through A. When B starts, A asks idle tunnels to move to B until
 * both hold their share; the watched cluster's tunnel is never asked, and
 * the watch keeps receiving events.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadHubConfig, writeHubConfig } from '../../../src/hub/contract/hub-config.js';
import { HUB_ADMIN_USER } from '../../../src/hub/identity/authenticate.js';
import { DEFAULT_REBALANCE } from '../../../src/hub/replicas/rebalancer.js';
import { startHub, type RunningHub } from '../../../src/hub/server/hub-server.js';
import { openHubStore, type EtcdStoreOptions } from '../../../src/hub/server/open-store.js';
import { newEncryptionKeyFileText } from '../../../src/hub/store/etcd/encryption.js';
import { silentLogger } from '../../../src/log/run-log.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import {
  etcdConnectionOptionsFor,
  freshEtcdPrefix,
  startEtcdCluster,
  type EtcdTestCluster,
} from '../../support/etcd-cluster.js';
import { call } from '../../support/https-client.js';
import {
  freePort,
  hubJson,
  startCli,
  startEdgeCluster,
  waitFor,
  type BackgroundCli,
  type EdgeCluster,
} from './hub-fixture.js';

const CLUSTERS = 4;

describe('hub replicas: the agents spread again when a replica returns', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'edgeadm-rebalance-'));
  let etcd: EtcdTestCluster;
  let options: EtcdStoreOptions;
  const hubs: RunningHub[] = [];
  const clusters: EdgeCluster[] = [];
  const processes: BackgroundCli[] = [];

  beforeAll(async () => {
    ensureCliBuilt('index.js', ['src']);
    etcd = await startEtcdCluster();
    const encryptionKeyFile = join(dataDir, 'encryption.key');
    writeFileSync(encryptionKeyFile, newEncryptionKeyFileText(), { mode: 0o600 });
    options = { ...etcdConnectionOptionsFor(etcd, freshEtcdPrefix()), encryptionKeyFile };
  }, 120_000);

  afterAll(async () => {
    for (const cli of processes) await cli.stop();
    for (const hub of hubs) await hub.close().catch(() => undefined);
    for (const cluster of clusters) await cluster.api.stop();
    await etcd?.stop();
  }, 120_000);

  const startReplica = async (port: number): Promise<{ hub: RunningHub; config: string }> => {
    const hub = await startHub({
      listen: `127.0.0.1:${port}`,
      dataDir,
      logger: silentLogger,
      openStore: (self) => openHubStore({ dataDir, etcd: options, replica: self }),
      // Every 250 ms, one tunnel at a time, no margin: the test sees each move.
      rebalance: { ...DEFAULT_REBALANCE, intervalMs: 250, margin: 0, slack: 0, maxMovesPerRound: 1, minTunnelAgeMs: 0 },
    });
    hubs.push(hub);
    const config = join(mkdtempSync(join(tmpdir(), 'edgeadm-rebalance-config-')), 'admin.yaml');
    writeHubConfig(config, { ...loadHubConfig(hub.adminConfigPath), server: hub.url });
    return { hub, config };
  };

  /** Tunnels per replica, as the operator API lists them. */
  const tunnelsOn = async (config: string): Promise<number[]> => {
    const hub = loadHubConfig(config);
    const answer = await call({ url: hub.server, caPem: hub.caPem }, { path: '/hub/v1/replicas', token: hub.token });
    const listing = answer.json as { replicas: { tunnels: number; advertiseUrl: string }[] };
    return listing.replicas
      .sort((x, y) => (x.advertiseUrl < y.advertiseUrl ? -1 : 1))
      .map((replica) => replica.tunnels);
  };

  it('moves idle tunnels to the replica that came back, and never the one a kubectl watch is using', async () => {
    const portB = await freePort();
    const a = await startReplica(0);
    const token = (await hubJson<{ token: string }>(['hub', 'token', 'create'], a.config)).token;
    for (let i = 0; i < CLUSTERS; i += 1) {
      const cluster = await startEdgeCluster(`shop-${i}`);
      clusters.push(cluster);
      const agent = startCli([
        'register-cloud',
        `127.0.0.1:${a.hub.port},127.0.0.1:${portB}`,
        '--token',
        token,
        '--hub-ca-cert-hash',
        a.hub.caPin,
        '--name',
        cluster.name,
        '--kubeconfig',
        cluster.kubeconfigPath,
        '--data-dir',
        cluster.dataDir,
        '--discovery-timeout',
        '3s',
        '--foreground',
      ]);
      processes.push(agent);
    }
    await waitFor('every agent connected to replica A', async () =>
      (await tunnelsOn(a.config)).reduce((sum, n) => sum + n, 0) === CLUSTERS ? true : undefined,
    );

    const watched = clusters[0]!;
    // The hub's admin, impersonated, is bound to cluster-admin on the watched cluster (the cluster's RBAC decides).
    watched.api.setObject({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'hub-admin' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: HUB_ADMIN_USER }],
    });
    watched.api.setObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'before', namespace: 'default' } });
    const watch = startCli([
      'kubectl',
      '--hub-config',
      a.config,
      '--cluster',
      watched.name,
      '--',
      'get',
      'configmaps',
      '-w',
      '--output-watch-events',
    ]);
    processes.push(watch);
    await watch.waitForOutput(/ADDED\s+before\s/);

    const b = await startReplica(portB);
    const spread = await waitFor('both replicas to hold half of the tunnels', async () => {
      const counts = await tunnelsOn(b.config);
      return counts.length === 2 && counts.every((n) => n === CLUSTERS / 2) ? counts : undefined;
    });
    expect(spread).toEqual([2, 2]);

    // The watch's tunnel stayed where it was: the stream is still open and still delivers.
    watched.api.setObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'after', namespace: 'default' } });
    await watch.waitForOutput(/ADDED\s+after\s/);
    expect(watch.process.exitCode).toBeNull();
    const metrics = await call(
      { url: a.hub.url, caPem: loadHubConfig(a.config).caPem },
      { path: '/metrics', token: loadHubConfig(a.config).token },
    );
    expect(metrics.text).toMatch(/^edgeadm_hub_tunnels_moved_total [1-9]/m);
  }, 180_000);
});
