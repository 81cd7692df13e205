/**
 * Expiry of hub credentials, end to end: `hub user create --ttl` and
 * `hub token create --ttl` through the CLI, against a hub started in this
 * process with a clock the test sets (no sleeping). The edge cluster is a
 * SIMULATED API server.
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
import {
  createHubToken,
  hubJson,
  hubRequest,
  registerArgs,
  startEdgeCluster,
  type EdgeCluster,
  type HubAddress,
} from './hub-fixture.js';
import { printedBy } from '../../support/run-output.js';

const HOUR_MS = 60 * 60 * 1000;

/** The token line of a hub config file. */
function tokenOf(configPath: string): string {
  const match = /^token: (\S+)$/m.exec(readFileSync(configPath, 'utf8'));
  if (!match) throw new Error(`no token in ${configPath}`);
  return match[1] as string;
}

describe('hub: credentials expire by the hub clock', { timeout: 120_000 }, () => {
  let now = new Date('2030-01-01T00:00:00.000Z');
  let hub: RunningHub;
  let address: HubAddress;
  const clusters: EdgeCluster[] = [];

  beforeAll(async () => {
    ensureCliBuilt('index.js', ['src']);
    const dataDir = mkdtempSync(join(tmpdir(), 'edgeadm-hub-expiry-'));
    hub = await startHub({ listen: '127.0.0.1:0', dataDir, logger: silentLogger, clock: () => now });
    address = { dataDir, port: hub.port, adminConfig: hub.adminConfigPath, caPin: hub.caPin };
  });

  afterAll(async () => {
    await hub?.close();
    for (const cluster of clusters) await cluster.api.stop();
  });

  it('refuses a user created with --ttl once the TTL has passed, and not a moment before', async () => {
    const config = join(mkdtempSync(join(tmpdir(), 'hub-user-')), 'dev.yaml');
    const created = await runCli([
      'hub',
      'user',
      'create',
      'temp-user',
      '--clusters-selector',
      'env=dev',
      '--ttl',
      '1h',
      '--output',
      config,
      '--hub-config',
      address.adminConfig,
      '--json',
    ]);
    expect(created.exitCode, printedBy(created)).toBe(0);
    const createdAt = now.getTime();
    expect(JSON.parse(created.stdout)).toMatchObject({ expiresAt: new Date(createdAt + HOUR_MS).toISOString() });
    const asUser = (): Promise<{ status: number }> =>
      hubRequest({ hub: address, path: '/clusters/nowhere-1/version', token: tokenOf(config) });
    // Authenticated, and not allowed to reach a cluster that does not exist: 403, not 401.
    expect((await asUser()).status).toBe(403);
    now = new Date(createdAt + HOUR_MS - 1);
    expect((await asUser()).status).toBe(403);
    now = new Date(createdAt + HOUR_MS);
    expect((await asUser()).status).toBe(401);
  });

  it('refuses a hub token created with --ttl once the TTL has passed: no discovery signature, no registration', async () => {
    const token = await createHubToken(address, ['--ttl', '1h']);
    const tokenId = token.split('.')[0] as string;
    const createdAt = now.getTime();
    const signed = async (): Promise<boolean> => {
      const answer = await hubRequest({ hub: address, path: CLUSTER_INFO_PATH });
      const data = (JSON.parse(answer.body) as { data: Record<string, string> }).data;
      return `jws-kubeconfig-${tokenId}` in data;
    };
    const early = await startEdgeCluster('early-1');
    const late = await startEdgeCluster('late-1');
    clusters.push(early, late);

    now = new Date(createdAt + HOUR_MS - 1);
    expect(await signed()).toBe(true);
    const registered = await runCli([
      ...registerArgs({ hub: address, token, cluster: early, labels: 'env=dev' }),
      '--register-only',
    ]);
    expect(registered.exitCode, printedBy(registered)).toBe(0);

    now = new Date(createdAt + HOUR_MS);
    expect(await signed()).toBe(false);
    const refused = await runCli([
      ...registerArgs({ hub: address, token, cluster: late, labels: 'env=dev' }),
      '--register-only',
    ]);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toMatch(/JWS signature|expired/);
    const direct = await hubRequest({
      hub: address,
      path: '/hub/v1/register',
      method: 'POST',
      token,
      body: '{"name":"late-1"}',
    });
    expect(direct.status).toBe(401);
    expect(direct.body).toContain('E_HUB_TOKEN_EXPIRED');
    const listed = await hubJson<{ clusters: { name: string }[] }>(['hub', 'clusters', 'list'], address.adminConfig);
    expect(listed.clusters.map((c) => c.name).sort()).toEqual(['early-1']);
  });
});
