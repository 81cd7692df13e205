/**
 * `hub migrate --to etcd` and `hub serve --store etcd`, end to end with real
 * processes: a SQLite hub with a registered cluster (its agent a real
 * `register-cloud --foreground`, its API server the SIMULATED one) is
 * stopped and migrated into a REAL three-member etcd; a replica on etcd,
 * started with an empty data directory, serves under the same CA, and the
 * same agent reconnects to it without registering again.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseHubConfig } from '../../../../src/hub/contract/hub-config.js';
import { runCli } from '../../../support/cli.js';
import {
  freshEtcdPrefix,
  hubEtcdStoreFlags,
  startEtcdCluster,
  type EtcdTestCluster,
} from '../../../support/etcd-cluster.js';
import {
  createHubToken,
  hubJson,
  hubRequest,
  kubectlVia,
  registerAndRun,
  startCli,
  startEdgeCluster,
  startHubProcess,
  waitFor,
  waitForState,
  type BackgroundCli,
  type EdgeCluster,
  type HubProcess,
} from '../hub-fixture.js';
import { printedBy } from '../../../support/run-output.js';

let etcd: EtcdTestCluster;
const running: BackgroundCli[] = [];
let edge: EdgeCluster | undefined;
/** The migrated hub's address (its CA and admin config) and the replica on etcd, for the tests after the first. */
let sqliteHub: HubProcess | undefined;
let onEtcd: HubProcess | undefined;

beforeAll(async () => {
  etcd = await startEtcdCluster();
});
afterAll(async () => {
  await edge?.agent?.stop();
  for (const cli of running) await cli.stop();
  await edge?.api.stop();
  await etcd?.stop();
});

function etcdFlags(prefix: string, keyFile: string): string[] {
  return hubEtcdStoreFlags(etcd, { encryptionKeyFile: keyFile, keyPrefix: prefix });
}

describe('hub migrate --to etcd', () => {
  it('moves a SQLite hub into etcd; its agent reconnects to a replica on etcd without registering again', async () => {
    const hub = await startHubProcess();
    running.push(hub);
    const token = await createHubToken(hub, ['--usages', '5']);
    edge = await startEdgeCluster('shop-1');
    await registerAndRun({ hub, token, cluster: edge, labels: 'env=prod' });
    await hub.stop();

    const keyFile = join(mkdtempSync(join(tmpdir(), 'hub-key-')), 'encryption.key');
    const made = await runCli(['hub', 'encryption-key', 'create', keyFile, '--json']);
    expect(made.exitCode, printedBy(made)).toBe(0);
    const prefix = freshEtcdPrefix();
    const migrated = await runCli([
      'hub',
      'migrate',
      '--to',
      'etcd',
      '--data-dir',
      hub.dataDir,
      ...etcdFlags(prefix, keyFile),
      '--json',
    ]);
    expect(migrated.exitCode, migrated.stdout + migrated.stderr).toBe(0);
    expect(JSON.parse(migrated.stdout)).toMatchObject({ clusters: 1, tokens: 1, users: 1, keyPrefix: prefix });

    // A second run would mix two hubs' state: refused.
    const again = await runCli([
      'hub',
      'migrate',
      '--to',
      'etcd',
      '--data-dir',
      hub.dataDir,
      ...etcdFlags(prefix, keyFile),
    ]);
    expect(again.exitCode).toBe(3);
    expect(again.stdout + again.stderr).toContain('E_HUB_MIGRATE_TARGET_NOT_EMPTY');

    // A replica on etcd, with a data directory of its own (empty), on the port the agent knows.
    const dataDir = mkdtempSync(join(tmpdir(), 'edgeadm-hub-replica-'));
    const replica = startCli([
      'hub',
      'serve',
      '--listen',
      `127.0.0.1:${hub.port}`,
      '--data-dir',
      dataDir,
      '--store',
      'etcd',
      ...etcdFlags(prefix, keyFile),
    ]);
    running.push(replica);
    const caPin = await waitFor('the replica to print its CA pin', () => {
      if (replica.process.exitCode !== null) throw new Error(`hub serve exited:\n${replica.output()}`);
      return /hub CA pin: (sha256:[0-9a-f]{64})/.exec(replica.output())?.[1];
    });
    expect(caPin).toBe(hub.caPin);
    onEtcd = { ...replica, dataDir, port: hub.port, adminConfig: join(dataDir, 'admin.yaml'), caPin };
    sqliteHub = hub;
    // The same agent process, never registered again.
    await waitForState(onEtcd, 'shop-1', 'Connected', edge.agent);
    expect(edge.agent?.output()).not.toMatch(/registered cluster shop-1.*\n[\s\S]*registered cluster shop-1/);
    // The old admin credential works on the replica, and so does kubectl through it.
    const listed = await hubJson<{ clusters: { name: string }[] }>(['hub', 'clusters', 'list'], hub.adminConfig);
    expect(listed.clusters.map((c) => c.name)).toEqual(['shop-1']);
    // kubectl through the replica reaches the cluster's API server over the tunnel (which answers the
    // admin, who has no groups there, with its own Forbidden).
    edge.api.clearRequests();
    const pods = await kubectlVia(onEtcd.adminConfig, 'shop-1', ['get', 'pods', '-o', 'name']);
    expect(pods.stderr).toContain('Forbidden');
    expect(edge.api.requests.find((r) => r.verb === 'list' && r.resource === 'pods')).toMatchObject({
      impersonatedUser: 'edgeadm-hub-admin',
    });
  });

  it('without etcd quorum: kubectl still works, changes are refused with 503 naming etcd, readyz fails; then it recovers', async () => {
    if (onEtcd === undefined || sqliteHub === undefined || edge === undefined) throw new Error('needs the test above');
    await etcd.loseQuorum();
    const { token } = parseHubConfig(readFileSync(sqliteHub.adminConfig, 'utf8'), 'admin.yaml');
    const refused = await waitFor('a change to be refused', async () => {
      const answer = await hubRequest({
        hub: sqliteHub!,
        path: '/hub/v1/tokens',
        method: 'POST',
        token,
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      return answer.status === 503 ? answer : undefined;
    });
    expect(JSON.parse(refused.body)).toMatchObject({
      code: 'E_HUB_STORE_UNAVAILABLE',
      message: expect.stringContaining('etcd'),
    });
    expect((await hubRequest({ hub: sqliteHub, path: '/readyz' })).status).toBe(503);
    edge.api.clearRequests();
    await kubectlVia(onEtcd.adminConfig, 'shop-1', ['get', 'pods', '-o', 'name']);
    expect(edge.api.requests.some((r) => r.verb === 'list' && r.resource === 'pods')).toBe(true);

    await etcd.restoreQuorum();
    await waitFor('readyz again', async () =>
      (await hubRequest({ hub: sqliteHub!, path: '/readyz' })).status === 200 ? true : undefined,
    );
    const created = await hubJson<{ token: string }>(['hub', 'token', 'create'], onEtcd.adminConfig);
    expect(created.token).toMatch(/\./);
  });

  it('refuses bad store flags before reaching etcd', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'edgeadm-hub-flags-'));
    const serve = (...storeFlags: string[]) =>
      runCli(['hub', 'serve', '--listen', '127.0.0.1:0', '--data-dir', dataDir, ...storeFlags]);
    const noKey = await serve('--store', 'etcd', '--etcd-endpoints', 'https://127.0.0.1:1');
    expect(noKey.exitCode).toBe(3);
    expect(noKey.stderr).toContain('E_HUB_ENCRYPTION_KEY_MISSING');
    const keyFile = join(dataDir, 'k');
    writeFileSync(keyFile, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
    const badEndpoint = await serve(
      '--store',
      'etcd',
      '--etcd-endpoints',
      'etcd.example:2379',
      '--encryption-key-file',
      keyFile,
    );
    expect(badEndpoint.exitCode).toBe(3);
    expect(badEndpoint.stderr).toContain('E_HUB_ETCD_ENDPOINTS');
    const etcdFlagOnSqlite = await serve('--etcd-endpoints', 'https://127.0.0.1:1');
    expect(etcdFlagOnSqlite.exitCode).toBe(3);
    expect(etcdFlagOnSqlite.stderr).toContain('E_HUB_STORE_FLAGS');
  });
});
