/**
 * Revoking hub access through the CLI, end to end against a real hub: `hub
 * token list` and `delete` (a leaked registration token stops registering,
 * and leaves the discovery document), `hub user list` and `delete` (a
 * leaked user token stops working). The edge cluster is a SIMULATED API
 * server.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type RunningHub } from '../../../src/hub/server/hub-server.js';
import { silentLogger } from '../../../src/log/run-log.js';
import { CLUSTER_INFO_PATH } from '../../../src/trust/cluster-info.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli } from '../../support/cli.js';
import { printedBy } from '../../support/run-output.js';
import {
  createHubToken,
  hubJson,
  hubRequest,
  registerArgs,
  startEdgeCluster,
  type EdgeCluster,
  type HubAddress,
} from './hub-fixture.js';

describe('hub: listing and revoking tokens and users from the CLI', { timeout: 120_000 }, () => {
  let hub: RunningHub;
  let address: HubAddress;
  const clusters: EdgeCluster[] = [];

  beforeAll(async () => {
    ensureCliBuilt('index.js', ['src']);
    const dataDir = mkdtempSync(join(tmpdir(), 'edgeadm-hub-access-'));
    hub = await startHub({ listen: '127.0.0.1:0', dataDir, logger: silentLogger });
    address = { dataDir, port: hub.port, adminConfig: hub.adminConfigPath, caPin: hub.caPin };
  });

  afterAll(async () => {
    await hub?.close();
    for (const cluster of clusters) await cluster.api.stop();
  });

  it('deletes a leaked registration token: listed without its secret, then gone from discovery, registering nothing', async () => {
    const token = await createHubToken(address, ['--usages', '5', '--labels', 'env=dev']);
    const [id, secret] = token.split('.') as [string, string];
    const table = await runCli(['hub', 'token', 'list', '--hub-config', address.adminConfig]);
    expect(table.exitCode, printedBy(table)).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`^${id}\\s+usable\\s+5\\s+\\S+\\s+\\S+\\s+env=dev$`, 'm'));
    expect(table.stdout + table.stderr).not.toContain(secret);
    const listed = await hubJson<{ tokens: { id: string }[] }>(['hub', 'token', 'list'], address.adminConfig);
    expect(listed.tokens.map((t) => t.id)).toContain(id);
    expect(JSON.stringify(listed)).not.toContain(secret);
    const before = await startEdgeCluster('before-1');
    const after = await startEdgeCluster('after-1');
    clusters.push(before, after);
    const registered = await runCli([
      ...registerArgs({ hub: address, token, cluster: before, labels: 'env=dev' }),
      '--register-only',
    ]);
    expect(registered.exitCode, printedBy(registered)).toBe(0);

    // The whole token, as it leaked, names it; its secret is not printed back.
    const deleted = await runCli(['hub', 'token', 'delete', token, '--hub-config', address.adminConfig]);
    expect(deleted.exitCode, printedBy(deleted)).toBe(0);
    expect(deleted.stdout).toContain(`hub token ${id} deleted`);
    expect(deleted.stdout + deleted.stderr).not.toContain(secret);
    const discovery = await hubRequest({ hub: address, path: CLUSTER_INFO_PATH });
    expect(Object.keys((JSON.parse(discovery.body) as { data: Record<string, string> }).data)).not.toContain(
      `jws-kubeconfig-${id}`,
    );
    const refused = await runCli([
      ...registerArgs({ hub: address, token, cluster: after, labels: 'env=dev' }),
      '--register-only',
    ]);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toMatch(/JWS signature/);
    const clustersNow = await hubJson<{ clusters: { name: string }[] }>(
      ['hub', 'clusters', 'list'],
      address.adminConfig,
    );
    expect(clustersNow.clusters.map((c) => c.name)).toEqual(['before-1']);

    const again = await runCli(['hub', 'token', 'delete', id, '--hub-config', address.adminConfig, '--json']);
    expect(again.exitCode).not.toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ error: { code: 'E_HUB_TOKEN_NOT_FOUND' } });
    const malformed = await runCli(['hub', 'token', 'delete', 'Not-An-Id', '--hub-config', address.adminConfig]);
    expect(malformed.exitCode).not.toBe(0);
    expect(malformed.stderr).toMatch(/Not-An-Id|token id/);
  });

  it('deletes a user: listed without a token, then their hub config no longer works; the admin stays', async () => {
    const config = join(mkdtempSync(join(tmpdir(), 'hub-user-')), 'bob.yaml');
    const created = await runCli([
      'hub',
      'user',
      'create',
      'bob',
      '--clusters-selector',
      'env=dev',
      '--groups',
      'dev-team',
      '--output',
      config,
      '--hub-config',
      address.adminConfig,
    ]);
    expect(created.exitCode, printedBy(created)).toBe(0);
    const bobToken = /^token: (\S+)$/m.exec(readFileSync(config, 'utf8'))![1]!;
    const table = await runCli(['hub', 'user', 'list', '--hub-config', address.adminConfig]);
    expect(table.exitCode, printedBy(table)).toBe(0);
    expect(table.stdout).toMatch(/^bob\s+active\s+env=dev\s+dev-team\s+never$/m);
    expect(table.stdout).toMatch(/^\S+\s+active\s+all \(admin\)/m);
    expect(table.stdout).not.toContain(bobToken);
    // Authenticated, and not allowed to reach a cluster that does not exist: 403, not 401.
    const asBob = (): Promise<{ status: number }> =>
      hubRequest({ hub: address, path: '/clusters/nowhere-1/version', token: bobToken });
    expect((await asBob()).status).toBe(403);
    const refusedToBob = await runCli(['hub', 'user', 'delete', 'bob', '--hub-config', config, '--json']);
    expect(JSON.parse(refusedToBob.stdout)).toMatchObject({ error: { code: 'E_HUB_FORBIDDEN' } });

    const deleted = await hubJson<{ name: string; isDeleted: boolean }>(
      ['hub', 'user', 'delete', 'bob'],
      address.adminConfig,
    );
    expect(deleted).toEqual({ name: 'bob', isDeleted: true });
    expect((await asBob()).status).toBe(401);
    const users = await hubJson<{ users: { name: string; isAdmin: boolean }[] }>(
      ['hub', 'user', 'list'],
      address.adminConfig,
    );
    expect(users.users.map((u) => u.name)).not.toContain('bob');
    const admin = users.users.find((u) => u.isAdmin)!;
    const refused = await runCli(['hub', 'user', 'delete', admin.name, '--hub-config', address.adminConfig, '--json']);
    expect(JSON.parse(refused.stdout)).toMatchObject({ error: { code: 'E_HUB_USER_ADMIN' } });
  });
});
