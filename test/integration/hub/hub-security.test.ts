/**
 * The hub's security cases, each against real processes: a hub and two
 * edge clusters (SIMULATED API servers) registered with
 * `register-cloud --foreground`. Every case fails if its check is removed.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { maxHeaderSize } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log/run-log.js';
import { readAgentState } from '../../../src/registration/agent-state.js';
import { connectTunnel } from '../../../src/tunnel/agent.js';
import { readUpstreamKubeconfig, Upstream } from '../../../src/tunnel/upstream.js';
import { MAX_PROXY_REQUEST_BODY_BYTES, MAX_REQUEST_HEADER_BYTES } from '../../../src/hub/limits.js';
import { dump, load } from 'js-yaml';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli } from '../../support/cli.js';
import {
  createHubToken,
  hubJson,
  hubRequest,
  kubectlVia,
  outputAndLogs,
  registerAndRun,
  registerArgs,
  startEdgeCluster,
  startHubProcess,
  waitFor,
  type EdgeCluster,
  type HubProcess,
} from './hub-fixture.js';
import { printedBy } from '../../support/run-output.js';

/** The token line of a hub config file. */
function tokenOf(configPath: string): string {
  const match = /^token: (\S+)$/m.exec(readFileSync(configPath, 'utf8'));
  if (!match) throw new Error(`no token in ${configPath}`);
  return match[1] as string;
}

describe('hub: security', { timeout: 120_000 }, () => {
  let hub: HubProcess;
  let dev: EdgeCluster;
  let prod: EdgeCluster;
  let devUserConfig: string;
  const secrets: string[] = [];
  const extraOutputs: string[] = [];

  beforeAll(async () => {
    ensureCliBuilt('index.js', ['src']);
    hub = await startHubProcess();
    dev = await startEdgeCluster('dev-1');
    prod = await startEdgeCluster('prod-1');
    const token = await createHubToken(hub);
    secrets.push(token.split('.')[1] as string, tokenOf(hub.adminConfig), dev.api.adminToken, prod.api.adminToken);
    // Both register at once, as a fleet's agents do.
    await Promise.all([
      registerAndRun({ hub, token, cluster: dev, labels: 'env=dev' }),
      registerAndRun({ hub, token, cluster: prod, labels: 'env=prod' }),
    ]);
    devUserConfig = join(mkdtempSync(join(tmpdir(), 'hub-user-')), 'dev.yaml');
    const created = await runCli([
      'hub',
      'user',
      'create',
      'dev-user',
      '--clusters-selector',
      'env=dev',
      '--groups',
      'system:masters',
      '--output',
      devUserConfig,
      '--hub-config',
      hub.adminConfig,
    ]);
    expect(created.exitCode, printedBy(created)).toBe(0);
    secrets.push(tokenOf(devUserConfig));
    secrets.push(readAgentState(dev.dataDir).keyPem.split('\n')[1] as string);
  });

  afterAll(async () => {
    await dev?.agent?.stop();
    await prod?.agent?.stop();
    await hub?.stop();
    await dev?.api.stop();
    await prod?.api.stop();
  });

  it('answers 401 to requests without valid credentials, and forwards nothing', async () => {
    dev.api.clearRequests();
    const anonymous = await hubRequest({ hub, path: '/clusters/dev-1/api/v1/namespaces' });
    const wrong = await hubRequest({
      hub,
      path: '/clusters/dev-1/api/v1/namespaces',
      token: 'edgeadm-hub-not-a-real-token',
    });
    const upgrade = await hubRequest({
      hub,
      path: '/clusters/dev-1/api/v1/namespaces/default/pods/web-0/exec?command=cat',
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
        'Sec-WebSocket-Version': '13',
      },
    }).catch((error: Error) => ({ status: -1, body: error.message }));
    const operator = await hubRequest({ hub, path: '/hub/v1/clusters' });
    expect([anonymous.status, wrong.status, operator.status]).toEqual([401, 401, 401]);
    expect(upgrade.status === 401 || upgrade.body.includes('401')).toBe(true);
    expect(JSON.parse(anonymous.body)).toMatchObject({ kind: 'Status', code: 401 });
    expect(dev.api.requests).toEqual([]);
  });

  it('keeps a user limited to env=dev away from every other cluster; the refused request never reaches the edge', async () => {
    prod.api.clearRequests();
    dev.api.clearRequests();
    const refused = await kubectlVia(devUserConfig, 'prod-1', ['get', 'pods']);
    expect(refused.exitCode).not.toBe(0);
    // edgeadm kubectl asks the hub first and prints its refusal (E_HUB_FORBIDDEN) instead of running kubectl.
    expect(refused.stderr).toMatch(/E_HUB_FORBIDDEN|Forbidden/);
    expect(prod.api.requests).toEqual([]);
    const allowed = await kubectlVia(devUserConfig, 'dev-1', ['get', 'pods', '-o', 'name']);
    expect(allowed.exitCode, printedBy(allowed)).toBe(0);
    expect(dev.api.requests.some((r) => r.impersonatedUser === 'dev-user')).toBe(true);
  });

  it('refuses a usage-limited token once it is spent', async () => {
    const token = await createHubToken(hub, ['--usages', '1']);
    const first = await startEdgeCluster('once-1');
    const second = await startEdgeCluster('once-2');
    try {
      const ok = await runCli([...registerArgs({ hub, token, cluster: first, labels: 'env=dev' }), '--register-only']);
      expect(ok.exitCode, printedBy(ok)).toBe(0);
      const spent = await runCli([
        ...registerArgs({ hub, token, cluster: second, labels: 'env=dev' }),
        '--register-only',
      ]);
      expect(spent.exitCode).not.toBe(0);
      const direct = await hubRequest({
        hub,
        path: '/hub/v1/register',
        method: 'POST',
        token,
        body: '{"name":"once-3"}',
      });
      expect(direct.body).toContain('E_HUB_TOKEN_SPENT');
      const listed = await hubJson<{ clusters: { name: string }[] }>(['hub', 'clusters', 'list'], hub.adminConfig);
      expect(listed.clusters.map((c) => c.name)).toContain('once-1');
      expect(listed.clusters.map((c) => c.name)).not.toContain('once-2');
    } finally {
      await first.api.stop();
      await second.api.stop();
    }
  });

  it('refuses unusable kubeconfig credentials before a registration, and leaves the token use unspent', async () => {
    const token = await createHubToken(hub, ['--usages', '1']);
    const cluster = await startEdgeCluster('creds-1');
    try {
      const dir = mkdtempSync(join(tmpdir(), 'hub-creds-'));
      const ca = await createCa({ commonName: 'elsewhere' });
      const client = await issueCertificate({ ca, commonName: 'admin', usages: ['client'] });
      writeFileSync(join(dir, 'client.crt'), client.certPem);
      // What /etc/shadow holds: readable text, no key.
      writeFileSync(join(dir, 'shadow'), 'root:$6$salt$hash:19000:0:99999:7:::\n', { mode: 0o600 });
      writeFileSync(join(dir, 'token'), `${cluster.api.adminToken}\n${cluster.api.adminToken}\n`, { mode: 0o600 });
      const withUser = (name: string, user: Record<string, string>): string => {
        const document = load(readFileSync(cluster.kubeconfigPath, 'utf8')) as { users: { user: unknown }[] };
        document.users[0]!.user = user;
        const path = join(dir, name);
        writeFileSync(path, dump(document), { mode: 0o600 });
        return path;
      };
      const kubeconfigs = [
        withUser('shadow-key.yaml', {
          'client-certificate': join(dir, 'client.crt'),
          'client-key': join(dir, 'shadow'),
        }),
        withUser('two-line-token.yaml', { tokenFile: join(dir, 'token') }),
        '/dev/zero',
      ];
      for (const kubeconfig of kubeconfigs) {
        const args = registerArgs({ hub, token, cluster, labels: 'env=dev' });
        args[args.indexOf('--kubeconfig') + 1] = kubeconfig;
        const result = await runCli([...args, '--register-only'], { timeoutMs: 30_000 });
        expect(result.exitCode, `${kubeconfig}: ${result.stderr}`).toBe(3);
        expect(result.stderr).toContain('E_UPSTREAM_KUBECONFIG');
        expect(result.stderr).toMatch(/not a PEM private key|whitespace or control characters|not a regular file/);
        expect(result.stderr).not.toContain(cluster.api.adminToken);
      }
      // A registration the hub refuses (a garbage CSR) spends nothing either.
      const garbage = await hubRequest({
        hub,
        path: '/hub/v1/register',
        method: 'POST',
        token,
        body: '{"name":"creds-1","csr":"garbage"}',
      });
      expect(garbage.status).toBe(400);
      const listed = await hubJson<{ clusters: { name: string }[] }>(['hub', 'clusters', 'list'], hub.adminConfig);
      expect(listed.clusters.map((c) => c.name)).not.toContain('creds-1');
      // The single use is still there for a registration that works.
      const ok = await runCli([...registerArgs({ hub, token, cluster, labels: 'env=dev' }), '--register-only']);
      expect(ok.exitCode, printedBy(ok)).toBe(0);
    } finally {
      await cluster.api.stop();
    }
  });

  it('answers 400, not 500, to numbers and encodings the operator API cannot take', async () => {
    const admin = tokenOf(hub.adminConfig);
    const huge = await hubRequest({
      hub,
      path: '/hub/v1/tokens',
      method: 'POST',
      token: admin,
      body: '{"ttlMs":1e308}',
    });
    expect(huge.status).toBe(400);
    expect(huge.body).toContain('ttlMs');
    const badEscape = await hubRequest({ hub, path: '/hub/v1/clusters/%E0%A4%A', token: admin });
    expect(badEscape.status).toBe(400);
    expect(badEscape.body).toContain('percent-encoded');
  });

  it('refuses a hub whose CA does not match the pin', async () => {
    const token = await createHubToken(hub);
    const cluster = await startEdgeCluster('pinned-1');
    try {
      const wrongPin = `sha256:${'ab'.repeat(32)}`;
      const result = await runCli([
        ...registerArgs({ hub, token, cluster, labels: 'env=dev', pin: wrongPin }),
        '--register-only',
      ]);
      expect(result.exitCode).not.toBe(0);
      expect(result.stderr).toContain('E_DISCOVERY_PIN_MISMATCH');
      expect(result.stderr).toMatch(/none of the public keys/);
    } finally {
      await cluster.api.stop();
    }
  });

  it("opens a tunnel only for the certificate's own cluster", async () => {
    const devState = readAgentState(dev.dataDir);
    const upstream = new Upstream(await readUpstreamKubeconfig(prod.kubeconfigPath), silentLogger);
    // dev-1's certificate, claiming to serve prod-1.
    await expect(
      connectTunnel({
        hubServer: devState.hubServer,
        hubCaPem: devState.hubCaPem,
        identity: () => ({ cluster: 'prod-1', certPem: devState.certPem, keyPem: devState.keyPem }),
        upstream,
        logger: silentLogger,
      }),
    ).rejects.toMatchObject({ code: 'E_TUNNEL_REFUSED', message: expect.stringContaining('for cluster "dev-1"') });
    upstream.close();
    prod.api.clearRequests();
    // prod-1's own tunnel is untouched: requests still reach prod-1's API server.
    const stillProd = await hubRequest({ hub, path: '/clusters/prod-1/version', token: tokenOf(hub.adminConfig) });
    expect(stillProd.status).toBe(200);
    expect(prod.api.requests.map((r) => r.path)).toContain('/version');
  });

  it('deleting a cluster revokes its certificate and closes its tunnel', async () => {
    const token = await createHubToken(hub);
    const gone = await startEdgeCluster('gone-1');
    try {
      await registerAndRun({ hub, token, cluster: gone, labels: 'env=dev' });
      const oldState = readAgentState(gone.dataDir);
      const deleted = await runCli(['hub', 'clusters', 'delete', 'gone-1', '--hub-config', hub.adminConfig]);
      expect(deleted.exitCode, printedBy(deleted)).toBe(0);
      await gone.agent?.waitForOutput(/tunnel to the hub closed|refused/);
      // Refused for good: the agent stops with exit 4 (its unit's RestartPreventExitStatus) instead of redialling forever.
      const exitCode = await waitFor('the refused agent to stop', () => gone.agent?.process.exitCode ?? undefined);
      expect(exitCode).toBe(4);
      expect(gone.agent?.output()).toMatch(/E_TUNNEL_REFUSED[\s\S]*times in a row\); the agent stops/);
      // Registered again under the same name, with a new certificate.
      const again = { ...gone, dataDir: join(mkdtempSync(join(tmpdir(), 'gone-again-')), 'agent') };
      const reRegistered = await runCli([
        ...registerArgs({ hub, token, cluster: again, labels: 'env=dev' }),
        '--register-only',
      ]);
      expect(reRegistered.exitCode, printedBy(reRegistered)).toBe(0);
      const upstream = new Upstream(await readUpstreamKubeconfig(gone.kubeconfigPath), silentLogger);
      await expect(
        connectTunnel({
          hubServer: oldState.hubServer,
          hubCaPem: oldState.hubCaPem,
          identity: () => ({ cluster: 'gone-1', certPem: oldState.certPem, keyPem: oldState.keyPem }),
          upstream,
          logger: silentLogger,
        }),
      ).rejects.toMatchObject({ code: 'E_TUNNEL_REFUSED', message: expect.stringContaining('revoked') });
      upstream.close();
      if (gone.agent) extraOutputs.push(outputAndLogs(gone.agent));
    } finally {
      await gone.agent?.stop();
      await gone.api.stop();
    }
  });

  it('limits the size of request heads and bodies, and forwards nothing oversized', async () => {
    const token = tokenOf(hub.adminConfig);
    const userToken = tokenOf(devUserConfig);
    dev.api.clearRequests();
    // A head between Node's own default limit and edgeadm's is read: the hub's limit is the one in force.
    // (Asked of a route the hub answers itself: the simulated API server keeps Node's default.)
    const paddingBelowLimit = MAX_REQUEST_HEADER_BYTES - 4096;
    expect(paddingBelowLimit).toBeGreaterThan(maxHeaderSize);
    const largeHeader = await hubRequest({
      hub,
      path: '/hub/v1/clusters',
      token,
      headers: { 'X-Padding': 'x'.repeat(paddingBelowLimit) },
    });
    expect(largeHeader.status).toBe(200);
    const bigHeader = await hubRequest({
      hub,
      path: '/clusters/dev-1/api/v1/namespaces',
      token: userToken,
      headers: { 'X-Padding': 'x'.repeat(MAX_REQUEST_HEADER_BYTES + 1024) },
    });
    expect(bigHeader.status).toBe(431);
    const bigBody = await hubRequest({
      hub,
      path: '/clusters/dev-1/api/v1/namespaces/default/configmaps',
      method: 'POST',
      token: userToken,
      headers: { 'Content-Type': 'application/json' },
      body: Buffer.alloc(MAX_PROXY_REQUEST_BODY_BYTES + 1024, 0x20),
    }).catch((error: Error) => ({ status: -1, body: error.message }));
    expect(bigBody.status).toBe(413);
    expect(dev.api.requests).toEqual([]);
    const bigApiBody = await hubRequest({
      hub,
      path: '/hub/v1/tokens',
      method: 'POST',
      token,
      body: Buffer.alloc(2 * 1024 * 1024, 0x20),
    }).catch((error: Error) => ({ status: -1, body: error.message }));
    expect(bigApiBody.status).toBe(413);
  });

  it('writes no secret to any log', async () => {
    const texts = [
      outputAndLogs(hub),
      ...[dev, prod].map((c) => (c.agent ? outputAndLogs(c.agent) : '')),
      ...extraOutputs,
    ];
    await waitFor('the logs to be written', () => (texts.join('').length > 0 ? true : undefined));
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(8);
      for (const text of texts) expect(text.includes(secret)).toBe(false);
    }
  });
});
