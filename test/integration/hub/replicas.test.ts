/**
 * Several hub replicas on one store: three replicas started in this process
 * (`startHub` with an injected store opener), edge clusters whose agents run
 * as real `register-cloud --foreground` processes given every replica's
 * address, SIMULATED API servers, and the real kubectl.
 *
 * The store and coordination underneath are ONE parameter, a
 * {@link ReplicaBackendFactory}: the in-memory coordination of test/support
 * (SIMULATED: one process, a shared SQLite store, leases that run out when
 * the test says so), and a REAL three-member etcd (Debian's etcd-server,
 * test/support/etcd-cluster.ts) with the hub's own etcd store, coordination
 * and identity. A replica's death is `crash()` (every socket destroyed,
 * nothing withdrawn) and then, on etcd, the revocation of its lease: what
 * etcd does when a killed process stops renewing it.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HUB_ADMIN_USER } from '../../../src/hub/identity/authenticate.js';
import type { RolloutStatusView } from '../../../src/rollout/api.js';
import { loadHubConfig, parseHubConfig, writeHubConfig } from '../../../src/hub/contract/hub-config.js';
import { startHub, type HubStoreOpener, type RunningHub } from '../../../src/hub/server/hub-server.js';
import { issueReplicaCredentials } from '../../../src/hub/replicas/peer-link.js';
import { peerControlPath, PEER_REPORTS_PATH } from '../../../src/hub/rollouts/peer-rollouts.js';
import { ensureHubPki, type HubPki } from '../../../src/hub/identity/hub-pki.js';
import type { OpenedHubStore } from '../../../src/hub/store/coordination.js';
import { newEncryptionKeyFileText } from '../../../src/hub/store/etcd/encryption.js';
import { openHubStore, type EtcdStoreOptions } from '../../../src/hub/server/open-store.js';
import { etcdConnectionOptionsFor, freshEtcdPrefix, startEtcdCluster } from '../../support/etcd-cluster.js';
import { silentLogger } from '../../../src/log/run-log.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { InMemoryReplicaSet } from '../../support/in-memory-replicas.js';
import {
  hubJson,
  kubectlVia,
  startCli,
  startEdgeCluster,
  waitFor,
  type EdgeCluster,
  type HubAddress,
} from './hub-fixture.js';

/** What the replicas of one run share: the store and coordination under test. */
export interface ReplicaBackend {
  /** The opener each replica is started with. */
  opener(): HubStoreOpener;
  /** The lease of a replica runs out (it was killed and renews nothing). */
  expire(replicaId: string): Promise<void>;
  /** The hub's CA and PKI, wherever the backend keeps them (to make an intruder's replica certificate). */
  pki(): Promise<HubPki>;
  close(): Promise<void>;
}

/** Makes a {@link ReplicaBackend} over a data directory the replicas share (CA, ticket key). */
export interface ReplicaBackendFactory {
  name: string;
  create(dataDir: string): Promise<ReplicaBackend>;
}

/** SIMULATED: the in-memory coordination and a shared SQLite store. */
export const inMemoryBackend: ReplicaBackendFactory = {
  name: 'in-memory coordination (simulated)',
  create: (dataDir) => {
    const set = new InMemoryReplicaSet(dataDir);
    return Promise.resolve({
      opener: () => set.opener(),
      expire: (id) => Promise.resolve(set.expire(id)),
      pki: () => ensureHubPki({ dataDir, names: [] }),
      close: () => set.close(),
    });
  },
};

/** REAL: a three-member etcd on loopback, the hub's etcd store, coordination and identity. */
export const etcdBackend: ReplicaBackendFactory = {
  name: 'a real three-member etcd',
  create: async (dataDir) => {
    const etcd = await startEtcdCluster();
    const encryptionKeyFile = join(dataDir, 'encryption.key');
    writeFileSync(encryptionKeyFile, newEncryptionKeyFileText(), { mode: 0o600 });
    const options: EtcdStoreOptions = { ...etcdConnectionOptionsFor(etcd, freshEtcdPrefix()), encryptionKeyFile };
    const opened = new Map<string, OpenedHubStore>();
    return {
      opener: () => async (self) => {
        const hub = await openHubStore({ dataDir, etcd: options, replica: self });
        opened.set(self.id, hub);
        return hub;
      },
      // The lease revoked: its record, claims and leadership go, as when it runs out.
      expire: async (id) => {
        const hub = opened.get(id);
        await hub?.coordination.close();
        await hub?.store.close();
      },
      pki: async () => {
        const reader = await openHubStore({ dataDir, etcd: options });
        try {
          return await reader.identity.ensurePki([]);
        } finally {
          await reader.coordination.close();
          await reader.store.close();
        }
      },
      close: () => etcd.stop(),
    };
  },
};

/** The backends the scenarios run on. */
const BACKENDS: ReplicaBackendFactory[] = [inMemoryBackend, etcdBackend];

const POD = 'web-0';

interface Replica {
  hub: RunningHub;
  /** The admin's hub config pointing at this replica. */
  config: string;
  /** The config of user `ops` (group system:masters on the clusters) pointing at this replica. */
  opsConfig: string;
  address: HubAddress;
  /** Reads of one cluster's tunnel holder this replica made (a list must not make one per cluster). */
  holderReads: { count: number };
}

/** The agent's register-cloud arguments, with every replica's address, `first` first. */
function registerArgs(options: {
  replicas: readonly Replica[];
  first: number;
  token: string;
  caPin: string;
  cluster: EdgeCluster;
}): string[] {
  const ports = options.replicas.map((r) => r.hub.port);
  const ordered = [...ports.slice(options.first), ...ports.slice(0, options.first)];
  return [
    'register-cloud',
    ordered.map((port) => `127.0.0.1:${port}`).join(','),
    '--token',
    options.token,
    '--hub-ca-cert-hash',
    options.caPin,
    '--name',
    options.cluster.name,
    '--kubeconfig',
    options.cluster.kubeconfigPath,
    '--data-dir',
    options.cluster.dataDir,
    '--discovery-timeout',
    '3s',
    '--foreground',
  ];
}

/** One HTTPS request to a replica, with optional client certificate. */
function rawRequest(options: {
  port: number;
  caPem: string;
  path: string;
  method?: string;
  token?: string;
  headers?: Record<string, string>;
  cert?: { certPem: string; keyPem: string };
  body?: string;
}): Promise<{ status: number; body: string; setCookie: string[] }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: options.port,
        path: options.path,
        method: options.method ?? 'GET',
        ca: options.caPem,
        agent: false,
        ...(options.cert === undefined ? {} : { cert: options.cert.certPem, key: options.cert.keyPem }),
        headers: {
          ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
          ...options.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            setCookie: res.headers['set-cookie'] ?? [],
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

interface ReplicaListing {
  replicas: { id: string; tunnels: number; isLeader?: boolean; advertiseUrl: string }[];
}

describe.each(BACKENDS)('hub replicas on $name', (factory) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'edgeadm-replicas-'));
  let backend: ReplicaBackend;
  const replicas: Replica[] = [];
  const clusters: EdgeCluster[] = [];
  const agents: ReturnType<typeof startCli>[] = [];
  let caPem: string;
  let caPin: string;
  let adminToken: string;
  let opsToken: string;
  let token: string;

  const startReplica = async (): Promise<Replica> => {
    const opener = backend.opener();
    const holderReads = { count: 0 };
    const hub = await startHub({
      listen: '127.0.0.1:0',
      dataDir,
      logger: silentLogger,
      openStore: async (self) => {
        const opened = await opener(self);
        const coordination = opened.coordination;
        if (coordination !== undefined) {
          const tunnelHolder = coordination.tunnelHolder.bind(coordination);
          coordination.tunnelHolder = (cluster) => {
            holderReads.count += 1;
            return tunnelHolder(cluster);
          };
        }
        return opened;
      },
    });
    const config = join(mkdtempSync(join(tmpdir(), 'edgeadm-replica-config-')), 'admin.yaml');
    writeHubConfig(config, { ...loadHubConfig(hub.adminConfigPath), server: hub.url });
    const opsConfig = join(mkdtempSync(join(tmpdir(), 'edgeadm-replica-ops-')), 'ops.yaml');
    return {
      hub,
      config,
      opsConfig,
      address: { dataDir, port: hub.port, adminConfig: config, caPin: hub.caPin },
      holderReads,
    };
  };

  /**
   * A cluster's state as a replica shows it, read over HTTPS as the CLI reads
   * it: for waits, where a CLI process per poll cost a second or more.
   */
  const stateOn = async (replica: Replica, cluster: string): Promise<string | undefined> => {
    const answer = await rawRequest({
      port: replica.hub.port,
      caPem,
      path: `/hub/v1/clusters/${cluster}`,
      token: adminToken,
    });
    return answer.status === 200 ? (JSON.parse(answer.body) as { state: string }).state : undefined;
  };

  /**
   * Lists every cluster's pods with the real kubectl through each of `through`;
   * the reads run at once (each is an edgeadm and a kubectl process).
   */
  const expectPodsThrough = async (through: readonly Replica[]): Promise<void> => {
    const pairs = through.flatMap((replica) => clusters.map((cluster) => ({ replica, cluster })));
    const results = await Promise.all(
      pairs.map(({ replica, cluster }) => kubectlVia(replica.opsConfig, cluster.name, ['get', 'pods', '-o', 'name'])),
    );
    pairs.forEach(({ replica, cluster }, i) => {
      const result = results[i]!;
      expect(result.stdout + result.stderr, `${cluster.name} via ${replica.hub.url}`).toContain(`pod/${POD}`);
    });
  };

  /** Registers a cluster whose agent dials replica `first` first, and waits until it is connected there. */
  const registerOn = async (first: number, cluster: EdgeCluster): Promise<void> => {
    const agent = startCli(registerArgs({ replicas, first, token, caPin, cluster }));
    agents.push(agent);
    cluster.agent = agent;
    await waitFor(`cluster ${cluster.name} connected to replica ${first}`, async () => {
      if (agent.process.exitCode !== null) throw new Error(`the agent exited:\n${agent.output()}`);
      const listing = await rawRequest({
        port: replicas[first]!.hub.port,
        caPem,
        path: '/hub/v1/replicas',
        token: adminToken,
      });
      const isListed = listing.status === 200 && (JSON.parse(listing.body) as ReplicaListing).replicas.length > 0;
      return isListed && (await stateOn(replicas[first]!, cluster.name)) === 'Connected' ? true : undefined;
    });
  };

  beforeAll(async () => {
    ensureCliBuilt('index.js', ['src']);
    backend = await factory.create(dataDir);
    for (let i = 0; i < 3; i += 1) replicas.push(await startReplica());
    caPem = loadHubConfig(replicas[0]!.config).caPem;
    caPin = replicas[0]!.hub.caPin;
    adminToken = loadHubConfig(replicas[0]!.config).token;
    token = (await hubJson<{ token: string }>(['hub', 'token', 'create'], replicas[0]!.config)).token;
    // A user made on replica 0 is used on every replica (the store is shared, nothing cached per replica).
    const ops = await hubJson<{ hubConfig: string }>(
      ['hub', 'user', 'create', 'ops', '--clusters-selector', '', '--groups', 'system:masters'],
      replicas[0]!.config,
    );
    opsToken = parseHubConfig(ops.hubConfig, 'hub user create').token;
    for (const replica of replicas) {
      writeHubConfig(replica.opsConfig, { ...loadHubConfig(replica.config), user: 'ops', token: opsToken });
    }
    clusters.push(...(await Promise.all([0, 1, 2].map((i) => startEdgeCluster(`site-${i}`)))));
    for (const cluster of clusters) {
      cluster.api.setObject({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: POD, namespace: 'default' },
        spec: { containers: [{ name: 'web', image: 'nginx' }] },
      });
      cluster.api.setObject(hubAdminBinding());
    }
    // Site i's agent dials replica i first; the three register at once, as a fleet's agents do.
    await Promise.all(clusters.map((cluster, i) => registerOn(i, cluster)));
  }, 240_000);

  afterAll(async () => {
    await Promise.all(agents.map((agent) => agent.stop()));
    for (const replica of replicas) await replica.hub.close();
    await backend?.close();
    for (const cluster of clusters) await cluster.api.stop();
  });

  it('lists every replica with its tunnels, and exactly one leader', async () => {
    const listing = await hubJson<ReplicaListing>(['hub', 'replicas', 'list'], replicas[1]!.config);
    expect(listing.replicas.map((r) => r.id).sort()).toEqual(replicas.map((r) => r.hub.replicaId).sort());
    expect(listing.replicas.map((r) => r.tunnels)).toEqual([1, 1, 1]);
    expect(listing.replicas.filter((r) => r.isLeader === true)).toHaveLength(1);
  });

  it('shows every cluster Connected on every replica, from the claims', async () => {
    for (const replica of replicas) {
      const holderReadsBefore = replica.holderReads.count;
      const listed = await hubJson<{ clusters: { name: string; state: string }[] }>(
        ['hub', 'clusters', 'list'],
        replica.config,
      );
      expect(listed.clusters.map((c) => `${c.name}=${c.state}`).sort()).toEqual(
        clusters.map((c) => `${c.name}=Connected`),
      );
      // One read of every claim for the whole list, not one per cluster (10,000 of them overran
      // the store's read deadline).
      expect(replica.holderReads.count).toBe(holderReadsBefore);
    }
  });

  it('shows every cluster Connected in the web view of every replica, and reads its nodes through any replica', async () => {
    for (const replica of replicas) {
      const port = replica.hub.port;
      const signIn = await rawRequest({
        port,
        caPem,
        path: '/ui/api/session',
        method: 'POST',
        token: opsToken,
        headers: { origin: `https://127.0.0.1:${port}`, 'sec-fetch-site': 'same-origin' },
      });
      expect(signIn.status).toBe(201);
      const cookie = (signIn.setCookie[0] ?? '').split(';')[0] ?? '';
      const holderReadsBefore = replica.holderReads.count;
      const listed = await rawRequest({ port, caPem, path: '/ui/api/clusters', headers: { cookie } });
      expect(listed.status).toBe(200);
      expect(replica.holderReads.count).toBe(holderReadsBefore);
      const page = JSON.parse(listed.body) as { clusters: { name: string; state: string }[] };
      expect(page.clusters.map((c) => `${c.name}=${c.state}`).sort()).toEqual(
        clusters.map((c) => `${c.name}=Connected`),
      );
      for (const cluster of clusters) {
        const one = await rawRequest({ port, caPem, path: `/ui/api/clusters/${cluster.name}`, headers: { cookie } });
        expect(JSON.parse(one.body), `${cluster.name} via ${replica.hub.url}`).toMatchObject({
          cluster: { state: 'Connected' },
        });
        const nodes = await rawRequest({
          port,
          caPem,
          path: `/ui/api/clusters/${cluster.name}/nodes`,
          headers: { cookie },
        });
        expect(nodes.status, `${cluster.name} nodes via ${replica.hub.url}: ${nodes.body}`).toBe(200);
      }
    }
  });

  it('reaches every cluster with kubectl through any replica', async () => {
    await expectPodsThrough(replicas);
  }, 240_000);

  it('forwards an exec (an upgraded connection) to the replica holding the tunnel', async () => {
    const result = await kubectlVia(
      replicas[0]!.opsConfig,
      clusters[2]!.name,
      ['exec', '-i', POD, '--', 'cat'],
      'hop\n',
    );
    expect(result.stdout).toBe('hop\n');
    const exec = clusters[2]!.api.requests.find((r) => r.subresource === 'exec');
    expect(exec).toMatchObject({ impersonatedUser: 'ops' });
  }, 120_000);

  it('ignores forwarding headers an operator sends: the identity is the token’s', async () => {
    const cluster = clusters[1]!;
    const before = cluster.api.requests.length;
    const answer = await rawRequest({
      port: replicas[0]!.hub.port,
      caPem,
      path: `/clusters/${cluster.name}/api/v1/namespaces/default/pods`,
      token: opsToken,
      headers: { 'edgeadm-peer-user': 'mallory', 'edgeadm-peer-groups': '["system:masters"]' },
    });
    expect(answer.status).toBe(200);
    const seen = cluster.api.requests.slice(before).find((r) => r.resource === 'pods');
    expect(seen?.impersonatedUser).toBe('ops');
  });

  it('refuses the forwarded path to an operator token and to a cluster certificate', async () => {
    const path = `/hub/peer/v1/clusters/${clusters[1]!.name}/api/v1/namespaces/default/pods`;
    const asOperator = await rawRequest({
      port: replicas[1]!.hub.port,
      caPem,
      path,
      token: adminToken,
      headers: { 'edgeadm-peer-user': 'mallory', 'edgeadm-peer-groups': '[]' },
    });
    expect(asOperator.status).toBe(403);
    expect(asOperator.body).toContain('only hub replicas');
    const agentCert = {
      certPem: readFileSync(join(clusters[0]!.dataDir, 'client.crt'), 'utf8'),
      keyPem: readFileSync(join(clusters[0]!.dataDir, 'client.key'), 'utf8'),
    };
    const asCluster = await rawRequest({
      port: replicas[1]!.hub.port,
      caPem,
      path,
      cert: agentCert,
      headers: { 'edgeadm-peer-user': 'mallory', 'edgeadm-peer-groups': '[]' },
    });
    expect(asCluster.status).toBe(403);
  });

  it('gives a replica certificate nothing outside the forwarded path, and never forwards twice', async () => {
    const pki = await backend.pki();
    const replicaCert = await issueReplicaCredentials(pki, 'intruder');
    const asOperator = await rawRequest({
      port: replicas[0]!.hub.port,
      caPem,
      path: `/clusters/${clusters[1]!.name}/api/v1/namespaces/default/pods`,
      cert: replicaCert,
    });
    expect(asOperator.status).toBe(401);
    const adminApi = await rawRequest({
      port: replicas[0]!.hub.port,
      caPem,
      path: '/hub/v1/clusters',
      cert: replicaCert,
    });
    expect(adminApi.status).toBe(401);
    // Replica 0 does not hold site-1's tunnel: a forwarded request there is not forwarded again.
    const secondHop = await rawRequest({
      port: replicas[0]!.hub.port,
      caPem,
      path: `/hub/peer/v1/clusters/${clusters[1]!.name}/api/v1/namespaces/default/pods`,
      cert: replicaCert,
      headers: { 'edgeadm-peer-user': 'edgeadm-hub-admin', 'edgeadm-peer-groups': '[]' },
    });
    expect(secondHop.status).toBe(503);
  });

  it('rolls out from the leading replica to the clusters every replica holds, and takes their reports', async () => {
    const listing = await hubJson<ReplicaListing>(['hub', 'replicas', 'list'], replicas[0]!.config);
    const leaderId = listing.replicas.find((r) => r.isLeader === true)?.id;
    const leader = replicas.find((r) => r.hub.replicaId === leaderId)!;
    // One cluster per replica: two of the three tunnels are held by replicas that do not lead.
    expect(listing.replicas.map((r) => r.tunnels)).toEqual([1, 1, 1]);
    const file = join(dataDir, 'everywhere.yaml');
    writeFileSync(file, dump(twoWaveRollout('everywhere', { clusters: clusters.map((c) => c.name) })));
    await hubJson(['hub', 'rollout', 'apply', '-f', file], leader.config);
    const done = await waitFor('the rollout complete on the clusters of every replica', async () => {
      const answer = await rawRequest({
        port: leader.hub.port,
        caPem,
        path: '/hub/v1/rollouts/everywhere?clusters=true',
        token: adminToken,
      });
      const view = JSON.parse(answer.body) as RolloutStatusView;
      return view.state === 'complete' ? view : undefined;
    });
    expect(done.clusters?.map((row) => `${row.cluster}=${row.phase}`)).toEqual(clusters.map((c) => `${c.name}=ready`));
    for (const cluster of clusters) {
      const applied = cluster.api.getObject({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: 'ha-demo',
        name: 'everywhere-site',
      });
      expect(applied?.data, cluster.name).toEqual({ site: cluster.name });
    }
  }, 180_000);

  it('refuses the peer rollout paths to operators, agents and replicas of another hub; never hands a copy on', async () => {
    const target = clusters[1]!;
    const holder = replicas[1]!;
    const copy = {
      rollout: 'intruder',
      owner: { user: HUB_ADMIN_USER, groups: ['system:masters'] },
      copy: {
        revision: '1-intruder',
        objects: [
          { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'intruder', namespace: 'default' }, data: {} },
        ],
      },
    };
    const report = { cluster: target.name, report: { kind: 'removed', rollout: 'everywhere', cluster: target.name } };
    const agentCert = {
      certPem: readFileSync(join(clusters[0]!.dataDir, 'client.crt'), 'utf8'),
      keyPem: readFileSync(join(clusters[0]!.dataDir, 'client.key'), 'utf8'),
    };
    const otherHub = await ensureHubPki({ dataDir: mkdtempSync(join(tmpdir(), 'edgeadm-other-hub-')), names: [] });
    const foreignReplica = await issueReplicaCredentials(otherHub, 'foreign');
    const callers: [string, { token?: string; cert?: { certPem: string; keyPem: string } }][] = [
      ['no credential', {}],
      ['an admin token', { token: adminToken }],
      ['an agent certificate', { cert: agentCert }],
      ['a replica certificate of another hub', { cert: foreignReplica }],
    ];
    for (const [who, credential] of callers) {
      for (const [path, body] of [
        [peerControlPath(target.name, 'apply'), copy],
        [peerControlPath(target.name, 'remove'), { rollout: 'everywhere', owner: copy.owner }],
        [PEER_REPORTS_PATH, { reports: [report] }],
      ] as const) {
        const answer = await rawRequest({
          port: holder.hub.port,
          caPem,
          path,
          method: 'POST',
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json' },
          ...credential,
        });
        expect(answer.status, `${who} on ${path}: ${answer.body}`).toBe(403);
        expect(answer.body).toContain('E_HUB_PEER_FORBIDDEN');
      }
    }
    // A replica of this hub reaches a cluster only through the replica that holds its tunnel: never handed on.
    const pki = await backend.pki();
    const replicaCert = await issueReplicaCredentials(pki, 'prober');
    const elsewhere = await rawRequest({
      port: replicas[0]!.hub.port,
      caPem,
      path: peerControlPath(target.name, 'apply'),
      method: 'POST',
      body: JSON.stringify(copy),
      cert: replicaCert,
    });
    expect(elsewhere.status).toBe(503);
    expect(JSON.parse(elsewhere.body)).toEqual({ status: 'disconnected' });
    // What is not a copy message is refused, as the agent would refuse it.
    const malformed = await rawRequest({
      port: holder.hub.port,
      caPem,
      path: peerControlPath(target.name, 'apply'),
      method: 'POST',
      body: JSON.stringify({ rollout: 'intruder', owner: copy.owner, copy: { revision: '../x', objects: [] } }),
      cert: replicaCert,
    });
    expect(malformed.status).toBe(400);
    expect(target.api.getObject({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'intruder' })).toBe(
      undefined,
    );
  });

  it('closes the tunnel on the replica that holds it when the cluster is deleted on another', async () => {
    const doomed = await startEdgeCluster('doomed');
    clusters.push(doomed);
    await registerOn(1, doomed);
    // Read over HTTPS (not the CLI) so that the time measured below is the hub's, not a process start's.
    const count = async (): Promise<number> => {
      const answer = await rawRequest({
        port: replicas[1]!.hub.port,
        caPem,
        path: '/hub/v1/replicas',
        token: adminToken,
      });
      const listing = JSON.parse(answer.body) as ReplicaListing;
      return listing.replicas.find((r) => r.id === replicas[1]!.hub.replicaId)?.tunnels ?? -1;
    };
    expect(await count()).toBe(2);
    const deletedAt = Date.now();
    const deleted = await rawRequest({
      port: replicas[0]!.hub.port,
      caPem,
      path: `/hub/v1/clusters/${doomed.name}`,
      method: 'DELETE',
      token: adminToken,
    });
    expect(deleted.status).toBe(200);
    await waitFor('the tunnel of the deleted cluster to close on replica 1', async () =>
      (await count()) === 1 ? true : undefined,
    );
    console.log(
      `tunnel closed on the holding replica ${Date.now() - deletedAt} ms after the delete was sent to another`,
    );
    await waitFor('the agent of the deleted cluster to be refused', () =>
      /E_TUNNEL_REFUSED/.test(doomed.agent!.output()) ? true : undefined,
    );
    clusters.pop();
    await doomed.agent?.stop();
    await doomed.api.stop();
  }, 120_000);

  it('brings a killed replica’s agents back on the others, every cluster reachable', async () => {
    const victim = replicas[2]!;
    await victim.hub.crash();
    await backend.expire(victim.hub.replicaId);
    const survivors = replicas.slice(0, 2);
    await waitFor('site-2 to be connected to a surviving replica', async () =>
      (await stateOn(survivors[0]!, 'site-2')) === 'Connected' ? true : undefined,
    );
    const listing = await hubJson<ReplicaListing>(['hub', 'replicas', 'list'], survivors[0]!.config);
    expect(listing.replicas.map((r) => r.id).sort()).toEqual(survivors.map((r) => r.hub.replicaId).sort());
    expect(listing.replicas.reduce((sum, r) => sum + r.tunnels, 0)).toBe(3);
    expect(listing.replicas.filter((r) => r.isLeader === true)).toHaveLength(1);
    await expectPodsThrough(survivors);
    replicas.pop();
  }, 240_000);
});

/** Lets the hub admin, who applies the rollouts, write on a cluster (its own RBAC decides). */
function hubAdminBinding(): Parameters<EdgeCluster['api']['setObject']>[0] {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'hub-admin' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: HUB_ADMIN_USER }],
  };
}

/** A Rollout of a ConfigMap and a Deployment in two waves, the first soaking before the second. */
function twoWaveRollout(
  name: string,
  placement: Record<string, unknown> = { clusterSelector: 'env=ha' },
): Record<string, unknown> {
  return {
    apiVersion: 'edgeadm.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name },
    spec: {
      placement,
      resources: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ha-demo' } },
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `${name}-site`, namespace: 'ha-demo' },
          data: { site: '${cluster.name}' },
        },
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name, namespace: 'ha-demo' },
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
      strategy: { waves: [1, '100%'], maxUnavailable: '100%', failureBudget: 0, soakSeconds: 3, deadlineSeconds: 60 },
    },
  };
}

describe.each(BACKENDS)('hub replicas on $name: the leader stops during a rollout', (factory) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'edgeadm-replicas-lead-'));
  let backend: ReplicaBackend;
  const hubs: RunningHub[] = [];
  const configs: string[] = [];
  const clusters: EdgeCluster[] = [];
  const agents: ReturnType<typeof startCli>[] = [];
  let caPem: string;
  let adminToken: string;

  const status = async (port: number, name: string): Promise<RolloutStatusView> => {
    const answer = await rawRequest({ port, caPem, path: `/hub/v1/rollouts/${name}?clusters=true`, token: adminToken });
    if (answer.status !== 200) throw new Error(`status of ${name}: ${answer.status} ${answer.body}`);
    return JSON.parse(answer.body) as RolloutStatusView;
  };

  beforeAll(async () => {
    ensureCliBuilt('index.js', ['src']);
    backend = await factory.create(dataDir);
    for (let i = 0; i < 2; i += 1) {
      const hub = await startHub({ listen: '127.0.0.1:0', dataDir, logger: silentLogger, openStore: backend.opener() });
      const config = join(mkdtempSync(join(tmpdir(), 'edgeadm-replica-config-')), 'admin.yaml');
      writeHubConfig(config, { ...loadHubConfig(hub.adminConfigPath), server: hub.url });
      hubs.push(hub);
      configs.push(config);
    }
    caPem = loadHubConfig(configs[0]!).caPem;
    adminToken = loadHubConfig(configs[0]!).token;
    const token = (await hubJson<{ token: string }>(['hub', 'token', 'create'], configs[0]!)).token;
    const addresses = hubs.map((hub) => `127.0.0.1:${hub.port}`).join(',');
    for (const name of ['shop-a', 'shop-b']) {
      const cluster = await startEdgeCluster(name);
      // Each cluster's own RBAC decides; the rollout writes as the admin who applied it.
      cluster.api.setObject(hubAdminBinding());
      clusters.push(cluster);
      const agent = startCli([
        'register-cloud',
        addresses,
        '--token',
        token,
        '--hub-ca-cert-hash',
        hubs[0]!.caPin,
        '--name',
        name,
        '--labels',
        'env=ha',
        '--kubeconfig',
        cluster.kubeconfigPath,
        '--data-dir',
        cluster.dataDir,
        '--discovery-timeout',
        '3s',
        '--foreground',
      ]);
      agents.push(agent);
      // Over HTTPS as the CLI reads it: a wait, where a CLI process per poll cost a second or more.
      await waitFor(`cluster ${name} connected`, async () => {
        if (agent.process.exitCode !== null) throw new Error(`the agent exited:\n${agent.output()}`);
        const answer = await rawRequest({
          port: hubs[0]!.port,
          caPem,
          path: `/hub/v1/clusters/${name}`,
          token: adminToken,
        });
        return answer.status === 200 && (JSON.parse(answer.body) as { state: string }).state === 'Connected'
          ? true
          : undefined;
      });
    }
  }, 240_000);

  afterAll(async () => {
    await Promise.all(agents.map((agent) => agent.stop()));
    for (const hub of hubs) await hub.close();
    await backend?.close();
    for (const cluster of clusters) await cluster.api.stop();
  });

  it('continues the rollout on the replica that takes the lead', async () => {
    const listing = await hubJson<ReplicaListing>(['hub', 'replicas', 'list'], configs[1]!);
    const leader = listing.replicas.find((r) => r.isLeader === true);
    expect(leader?.id).toBe(hubs[0]!.replicaId);
    const file = join(dataDir, 'failover.yaml');
    writeFileSync(file, dump(twoWaveRollout('failover')));
    await hubJson(['hub', 'rollout', 'apply', '-f', file], configs[0]!);
    const mid = await waitFor('the first wave delivered', async () => {
      const view = await status(hubs[0]!.port, 'failover');
      return (view.clusters ?? []).some((row) => row.wave === 0 && row.phase !== 'waiting') && view.state !== 'complete'
        ? view
        : undefined;
    });
    // Until it leads, the other replica says where rollouts are served.
    const notLeading = await rawRequest({
      port: hubs[1]!.port,
      caPem,
      path: '/hub/v1/rollouts/failover',
      token: adminToken,
    });
    expect(notLeading.status).toBe(503);
    expect(notLeading.body).toContain('does not run the rollout controller');
    // The leader dies in the middle of the rollout; its lease runs out.
    await hubs[0]!.crash();
    await backend.expire(hubs[0]!.replicaId);
    const survivor = hubs[1]!;
    const resumed = await waitFor('the rollout complete on the new leader', async () => {
      const view = await status(survivor.port, 'failover');
      return view.state === 'complete' ? view : undefined;
    });
    expect(resumed.revision).toBe(mid.revision);
    expect(resumed.clusters?.map((row) => row.phase).sort()).toEqual(['ready', 'ready']);
    const after = await hubJson<ReplicaListing>(['hub', 'replicas', 'list'], configs[1]!);
    expect(after.replicas.map((r) => [r.id, r.isLeader])).toEqual([[survivor.replicaId, true]]);
    hubs.shift();
    configs.shift();
  }, 240_000);
});
