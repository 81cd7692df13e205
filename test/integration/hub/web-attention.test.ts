/**
 * The web view's "Needs attention" page end to end, in a real browser:
 * Debian's chromium driven by playwright-core, against a real hub in this
 * process (`startHub`), with five edge clusters registered by edgeadm's
 * real registration and run by its real agent service (tunnel, health
 * reporter, rollouts) in this process, each with its own SIMULATED API
 * server (test/support/sim-apiserver). One site is then cut off, one held
 * by the admin; one has a node that is not Ready, one an API server
 * certificate that expires in 9 days, as their agents read and report
 * them. The fifth needs nothing. The agents read their nodes every 200 ms
 * here instead of 15 s (the test read period, passed in as their
 * environment).
 *
 * From the fleet page's count to the page and its rows, a reason's filter,
 * a cluster's page with its health; the API as a scoped user sees it and
 * its 400s; and the `hub clusters list --attention` examples of --help, run
 * as printed. Screenshots go to a directory printed at the start (not
 * committed), beside those of web-view.test.ts.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installedPackageObject } from '../../../src/health/installed-package.js';
import { TEST_HEALTH_READ_ENV } from '../../../src/health/wire.js';
import type { ClusterView } from '../../../src/hub/contract/views.js';
import { startHub, type RunningHub } from '../../../src/hub/server/hub-server.js';
import { silentLogger } from '../../../src/log/run-log.js';
import { runAgentService } from '../../../src/registration/agent-service.js';
import { registerCluster } from '../../../src/registration/registration.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { REPO_ROOT } from '../../support/cli.js';
import { startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';
import { waitFor } from './hub-fixture.js';
import {
  ensureWebBuilt,
  launchChromium,
  screenshotDir,
  signInDirect,
  tokenOf,
  webRequest,
} from '../../support/web-view.js';

const INSTALLED = {
  name: 'edge-k3s-v1.30.4-amd64',
  version: 'v1.30.4',
  distribution: 'k3s',
  manifestSha256: 'ab'.repeat(32),
  action: 'init' as const,
  at: '2026-10-20T04:00:00.000Z',
};

function nodeObject(name: string, ready: 'True' | 'False'): Parameters<SimApiServer['setObject']>[0] {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
    status: { conditions: [{ type: 'Ready', status: ready }], nodeInfo: { kubeletVersion: 'v1.30.4+sim' } },
  } as Parameters<SimApiServer['setObject']>[0];
}
const SITES: [string, string][] = [
  ['shop-cut', 'env=prod,region=eu'],
  ['shop-held', 'env=prod,region=eu'],
  ['shop-nodes', 'env=prod,region=us'],
  ['shop-certs', 'env=prod,region=us'],
  ['shop-fine', 'env=prod,region=eu'],
];

describe('the "Needs attention" page in chromium', { timeout: 180_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'hub-web-attention-'));
  const dataDir = join(root, 'hub');
  const sims = new Map<string, SimApiServer>();
  const agents = new Map<string, { stop: AbortController; run: Promise<void> }>();
  let hub: RunningHub;
  let adminToken: string;
  let browser: Browser;
  let page: Page;
  let shots: string;
  const url = (path: string): string => `https://127.0.0.1:${hub.port}${path}`;
  const address = (): { port: number; dataDir: string } => ({ port: hub.port, dataDir });

  /** One operator API call with the admin's token. */
  const operator = (method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> =>
    new Promise((resolve, reject) => {
      const req = request(
        url(path),
        {
          method,
          ca: readFileSync(join(dataDir, 'pki', 'ca.crt'), 'utf8'),
          headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text === '' ? {} : JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  const clusterOf = async (name: string): Promise<ClusterView> =>
    (await operator('GET', `/hub/v1/clusters/${name}`)).json as ClusterView;
  const rows = (target: Page): Promise<[string, string][]> =>
    target
      .locator('table.attention tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => [tr.getAttribute('data-cluster') ?? '', tr.getAttribute('data-reasons') ?? '']),
      );

  beforeAll(async () => {
    ensureWebBuilt();
    ensureCliBuilt('commands/hub/clusters/list.js', ['src']);
    shots = screenshotDir('attention');
    console.log(`attention page screenshots: ${shots}`);
    hub = await startHub({ listen: '127.0.0.1:0', dataDir, logger: silentLogger });
    adminToken = tokenOf(hub.adminConfigPath);
    const { token } = (await operator('POST', '/hub/v1/tokens', { ttlMs: 600_000 })).json as { token: string };
    for (const [name, labels] of SITES) {
      // shop-certs: its API server's certificate expires in 9 days.
      const sim = await startSimApiServer({
        gitVersion: 'v1.30.4+sim',
        ...(name === 'shop-certs' ? { servingValidityDays: 9 } : {}),
      });
      sims.set(name, sim);
      sim.setObject(nodeObject(`${name}-a`, 'True'));
      if (name === 'shop-nodes') {
        sim.setObject(nodeObject('shop-nodes-b', 'False'));
        sim.setObject(nodeObject('shop-nodes-c', 'True'));
        sim.setObject(installedPackageObject(INSTALLED) as Parameters<SimApiServer['setObject']>[0]);
        // The hub admin reads the nodes on the cluster's page as itself (impersonated): this cluster lets it.
        sim.setObject({
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: { name: 'hub-admin' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'edgeadm-hub-admin' }],
        } as Parameters<SimApiServer['setObject']>[0]);
      }
      const kubeconfig = join(root, `${name}.kubeconfig`);
      writeFileSync(kubeconfig, sim.kubeconfig(), { mode: 0o600 });
      const { state } = await registerCluster({
        hub: new URL(hub.url).host,
        token,
        caCertHashes: [hub.caPin],
        cluster: name,
        labels: Object.fromEntries(labels.split(',').map((pair) => pair.split('=') as [string, string])),
        kubeconfig,
        createServiceAccount: false,
        dataDir: join(root, name),
        discoveryTimeout: 30_000,
        logger: silentLogger,
      });
      const stop = new AbortController();
      const run = runAgentService({
        dataDir: join(root, name),
        state,
        logger: silentLogger,
        signal: stop.signal,
        env: { [TEST_HEALTH_READ_ENV]: '200' },
      }).catch(() => undefined);
      agents.set(name, { stop, run });
    }
    for (const [name] of SITES) {
      await waitFor(`${name} to connect and report its health`, async () => {
        const view = await clusterOf(name);
        return view.state === 'Connected' && view.health !== undefined ? true : undefined;
      });
    }
    // What needs attention: one site cut off, one held; shop-nodes and shop-certs report trouble.
    agents.get('shop-cut')?.stop.abort();
    await waitFor('shop-cut to be disconnected', async () =>
      (await clusterOf('shop-cut')).state === 'Disconnected' ? true : undefined,
    );
    expect((await operator('PUT', '/hub/v1/clusters/shop-held/hold', { reason: 'inventory count' })).status).toBe(200);
    browser = await launchChromium();
    const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 860 } });
    page = await context.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    for (const agent of agents.values()) agent.stop.abort();
    await Promise.all([...agents.values()].map((agent) => agent.run));
    await hub?.close();
    for (const sim of sims.values()) await sim.stop();
  });

  it('counts them on the fleet page, and the count leads to the page with each cluster and its reasons', async () => {
    await page.goto(url('/ui/'));
    await page.getByLabel('Hub user token').fill(adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByTestId('attention-total').textContent()).toBe('4');
    expect(await page.getByTestId('attention-offline').textContent()).toBe('1');
    expect(await page.getByTestId('attention-held').textContent()).toBe('1');
    await page.getByTestId('attention-total').click();
    // Most severe first: offline, nodes not Ready, a certificate expiring, held.
    await expect
      .poll(() => rows(page))
      .toEqual([
        ['shop-cut', 'offline'],
        ['shop-nodes', 'nodes-not-ready'],
        ['shop-certs', 'certificate-expiring'],
        ['shop-held', 'held'],
      ]);
    const text = (name: string) => page.locator(`tr[data-cluster="${name}"]`).textContent();
    expect(await text('shop-cut')).toMatch(/Offline\s*last seen \d+ s ago/);
    expect(await text('shop-nodes')).toContain('1 of 3 nodes not Ready: shop-nodes-b');
    expect(await text('shop-certs')).toMatch(/API server certificate expires in [89] d/);
    expect(await text('shop-held')).toContain('held by edgeadm-hub-admin: inventory count');
    expect(await page.getByTestId('attention-count').textContent()).toBe('1–4 of 4 clusters');
    await page.screenshot({ path: join(shots, 'attention.png'), fullPage: true });
  });

  it("filters by one reason, and opens a cluster's page with its health", async () => {
    await page.getByRole('link', { name: /Nodes not Ready/ }).click();
    await expect.poll(() => rows(page)).toEqual([['shop-nodes', 'nodes-not-ready']]);
    await page.getByRole('link', { name: 'shop-nodes', exact: true }).click();
    const health = page.getByRole('region', { name: 'Health' });
    await expect.poll(() => page.getByTestId('health-nodes').textContent()).toContain('2 of 3 nodes Ready');
    expect(await page.getByTestId('health-nodes').textContent()).toContain('not Ready: shop-nodes-b');
    expect(await health.locator('tr[data-certificate="apiserver-serving"]').textContent()).toMatch(/\(in 36[45] d\)/);
    expect(await health.locator('tr[data-certificate="hub-client"]').count()).toBe(1);
    expect(await page.getByTestId('health-package').textContent()).toContain('edge-k3s-v1.30.4-amd64 v1.30.4 (k3s)');
    await page.locator('tr[data-node="shop-nodes-b"]').waitFor();
    await page.screenshot({ path: join(shots, 'attention-cluster-health.png'), fullPage: true });
  });

  it('answers the API as the clusters list does: a user sees their clusters only, a bad query is a 400 naming it', async () => {
    expect((await webRequest({ ...address(), path: '/ui/api/attention' })).status).toBe(401);
    const created = await operator('POST', '/hub/v1/users', { name: 'us-ops', clustersSelector: 'region=us' });
    const scoped = await signInDirect(address(), (created.json as { token: string }).token);
    const get = (path: string) => webRequest({ ...address(), path, headers: { cookie: scoped.cookie } });
    const listed = await get('/ui/api/attention');
    expect(listed.status).toBe(200);
    const names = (listed.json.rows as { cluster: { name: string } }[]).map((row) => row.cluster.name);
    expect(names).toEqual(['shop-nodes', 'shop-certs']);
    expect(listed.json.counts).toMatchObject({ offline: 0, held: 0, 'nodes-not-ready': 1 });
    const bad = await get('/ui/api/attention?offlineFor=10m');
    expect([bad.status, bad.json.code]).toEqual([400, 'E_ATTENTION_BAD_QUERY']);
    expect(String(bad.json.message)).toMatch(/^offlineFor/);
  });

  it('runs the --attention examples of hub clusters list --help as printed', async () => {
    const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'oclif.manifest.json'), 'utf8')) as {
      commands: Record<string, { examples?: string[] }>;
    };
    const examples = (manifest.commands['hub:clusters:list']?.examples ?? []).filter((e) => e.includes('--attention'));
    expect(examples.length).toBeGreaterThanOrEqual(2);
    const cli = `${process.execPath} ${join(REPO_ROOT, 'bin/run.js')}`;
    // Not execFileSync: the hub answering it runs in this process.
    const run = async (example: string): Promise<string> =>
      (
        await promisify(execFile)('bash', ['-c', example.replace('<%= config.bin %>', cli)], {
          encoding: 'utf8',
          env: { ...process.env, EDGEADM_HUB_CONFIG: hub.adminConfigPath, NO_COLOR: '1' },
        })
      ).stdout;
    for (const example of examples) {
      const stdout = await run(example);
      if (example.includes('--json')) {
        const list = JSON.parse(stdout) as { rows: { cluster: { name: string } }[]; certsWithinDays: number };
        // --offline-for 10m: shop-cut has been away for moments only.
        expect(list.rows.map((row) => row.cluster.name)).toEqual(['shop-nodes', 'shop-certs', 'shop-held']);
        expect(list.certsWithinDays).toBe(14);
      } else {
        expect(stdout).toMatch(/^shop-cut +Disconnected +\d+s ago .*offline \d+s$/m);
        expect(stdout).toMatch(/^shop-held +Connected +connected .*held by edgeadm-hub-admin: inventory count$/m);
        expect(stdout).not.toContain('shop-fine');
      }
    }
  });
});
