/**
 * The hub's web view end to end, in a real browser: Debian's chromium
 * driven by playwright-core, against a real `hub serve` (bin/run.js) with
 * edge clusters registered by real `register-cloud --foreground` agents
 * (their API servers SIMULATED, test/support/sim-apiserver). Sign in, the
 * fleet, the clusters table and its filters, a cluster's page with nodes
 * read through its tunnel, a cluster going offline while the page is open,
 * pausing a rollout; a scoped user's view and direct API calls; no session
 * and cross-site requests refused. Screenshots of every view are written
 * to a directory printed at the start (not committed).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli } from '../../support/cli.js';
import {
  ensureWebBuilt,
  launchChromium,
  screenshotDir,
  signInDirect,
  tokenOf,
  webRequest,
  type ApiSession,
} from '../../support/web-view.js';
import {
  createHubToken,
  hubJson,
  registerAndRun,
  startEdgeCluster,
  startHubProcess,
  type EdgeCluster,
  type HubProcess,
} from './hub-fixture.js';
import { printedBy } from '../../support/run-output.js';

const ROLLOUT = `apiVersion: edgeadm.io/v1alpha1
kind: Rollout
metadata: { name: web }
spec:
  placement: { clusterSelector: env=prod }
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata: { name: site, namespace: default }
      data:
        site: \${cluster.name}
`;

function nodeOf(cluster: string) {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: `${cluster}-node`, labels: { 'node-role.kubernetes.io/control-plane': '' } },
    status: { conditions: [{ type: 'Ready', status: 'True' }], nodeInfo: { kubeletVersion: 'v1.30.4+sim' } },
  };
}

describe('hub web view in chromium', { timeout: 180_000 }, () => {
  let hub: HubProcess;
  const clusters: EdgeCluster[] = [];
  let browser: Browser;
  let admin: BrowserContext;
  let page: Page;
  let devConfig: string;
  let shots: string;
  const byName = (name: string): EdgeCluster => clusters.find((c) => c.name === name) as EdgeCluster;
  const url = (path: string): string => `https://127.0.0.1:${hub.port}${path}`;
  const shoot = async (target: Page, name: string): Promise<void> => {
    await target.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  };

  beforeAll(async () => {
    ensureCliBuilt('hub/web/web-server.js', ['src']);
    ensureWebBuilt();
    shots = screenshotDir('e2e');
    console.log(`web view screenshots: ${shots}`);
    hub = await startHubProcess();
    const token = await createHubToken(hub);
    const sites: [string, string][] = [
      ['shop-001', 'env=prod,region=eu'],
      ['shop-002', 'env=prod,region=us'],
      ['lab-001', 'env=dev,region=eu'],
    ];
    // The three register at once, as a fleet's agents do.
    await Promise.all(
      sites.map(async ([name, labels]) => {
        const cluster = await startEdgeCluster(name);
        cluster.api.setObject(nodeOf(name));
        // The hub admin reads nodes as itself (impersonated): this cluster lets it.
        cluster.api.setObject({
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: { name: 'hub-admin' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'edgeadm-hub-admin' }],
        });
        clusters.push(cluster);
        await registerAndRun({ hub, token, cluster, labels });
      }),
    );
    devConfig = join(mkdtempSync(join(tmpdir(), 'web-user-')), 'dev.yaml');
    const created = await runCli([
      'hub',
      'user',
      'create',
      'dev-ops',
      '--clusters-selector',
      'env=dev',
      '--groups',
      'system:masters',
      '--output',
      devConfig,
      '--hub-config',
      hub.adminConfig,
    ]);
    expect(created.exitCode, printedBy(created)).toBe(0);
    const rolloutFile = join(mkdtempSync(join(tmpdir(), 'web-rollout-')), 'web.yaml');
    writeFileSync(rolloutFile, ROLLOUT);
    await hubJson(['hub', 'rollout', 'apply', '-f', rolloutFile], hub.adminConfig);
    browser = await launchChromium();
    admin = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 860 } });
    page = await admin.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    for (const cluster of clusters) await cluster.agent?.stop();
    await hub?.stop();
    for (const cluster of clusters) await cluster.api.stop();
  });

  it('answers nothing but 401 without a session', async () => {
    for (const path of ['/ui/api/fleet', '/ui/api/clusters', '/ui/api/clusters/shop-001', '/ui/api/rollouts/web']) {
      const answer = await webRequest({ ...hub, path });
      expect(answer.status, path).toBe(401);
      expect(JSON.stringify(answer.json)).not.toContain('shop-001');
    }
    // A cookie the hub never issued is no session either.
    const forged = await webRequest({
      ...hub,
      path: '/ui/api/clusters',
      headers: { cookie: '__Secure-edgeadm-session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' },
    });
    expect(forged.status).toBe(401);
  });

  it('signs in with the admin token and shows the fleet', async () => {
    await page.goto(url('/ui/'));
    await shoot(page, '0-sign-in');
    await page.getByLabel('Hub user token').fill(tokenOf(hub.adminConfig));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByTestId('total').textContent()).toBe('3');
    await expect.poll(() => page.getByTestId('connected').textContent()).toBe('3');
    const cookie = (await admin.cookies()).find((c) => c.name === '__Secure-edgeadm-session');
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict', path: '/ui' });
    expect(cookie?.expires).toBeGreaterThan(Date.now() / 1000);
    await page.getByRole('link', { name: 'Rollouts' }).first().waitFor();
    await shoot(page, '1-fleet');
  });

  const rowNames = async (target: Page): Promise<string[]> =>
    target
      .locator('table.clusters tbody tr')
      .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-cluster') ?? ''));

  it('lists the clusters and filters them by label selector and text', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Clusters' }).click();
    await expect.poll(() => rowNames(page)).toEqual(['lab-001', 'shop-001', 'shop-002']);
    await shoot(page, '2-clusters');
    await page.getByLabel('Label selector').fill('env=prod');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => rowNames(page)).toEqual(['shop-001', 'shop-002']);
    await page.getByLabel('Label selector').fill('');
    await page.getByLabel('Text').fill('lab');
    await page.getByLabel('Text').press('Enter');
    await expect.poll(() => rowNames(page)).toEqual(['lab-001']);
    // Sorting by name, descending, is the hub's work too.
    await page.getByRole('link', { name: 'Clear' }).click();
    await page.getByRole('button', { name: /^Name/ }).click();
    await page.getByRole('button', { name: /^Name/ }).click();
    await expect.poll(() => rowNames(page)).toEqual(['shop-002', 'shop-001', 'lab-001']);
  });

  it('names what needs attention on the fleet page: a held cluster, linked to the held ones on "Needs attention"', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Fleet' }).click();
    await page.getByTestId('attention-none').waitFor();
    await hubJson(['hub', 'clusters', 'hold', 'shop-002', '--reason', 'opening hours'], hub.adminConfig);
    try {
      // The hold reaches the open page by the live events, without a reload.
      await expect.poll(() => page.getByTestId('attention-held').textContent()).toBe('1');
      await shoot(page, '1b-attention');
      await page.getByTestId('attention-held').click();
      await expect.poll(() => page.url()).toContain('#/attention?reason=held');
      await expect.poll(() => rowNames(page)).toEqual(['shop-002']);
    } finally {
      await hubJson(['hub', 'clusters', 'release', 'shop-002'], hub.adminConfig);
    }
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Fleet' }).click();
    await page.getByTestId('attention-none').waitFor();
    // Back where the next test begins: the whole clusters list.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Clusters' }).click();
    await expect.poll(() => rowNames(page)).toEqual(['lab-001', 'shop-001', 'shop-002']);
  });

  it("opens a cluster's page with its labels, its nodes read through the tunnel, and its rollouts", async () => {
    await page.getByRole('link', { name: 'shop-001', exact: true }).click();
    await page.locator('tr[data-node="shop-001-node"]').waitFor();
    expect(await page.locator('tr[data-node="shop-001-node"]').textContent()).toContain('Ready');
    // The node's name and kubelet version each on one line, and the table not cut off (newcomer point 19).
    // Run in the page (this file is compiled without the DOM's types): lines each cell's text takes.
    const layout = await page.evaluate(`(() => {
      const row = document.querySelector('tr[data-node="shop-001-node"]');
      const lines = (cell) => {
        const range = document.createRange();
        range.selectNodeContents(cell);
        return range.getClientRects().length;
      };
      const wrap = row.closest('.table-wrap');
      return { name: lines(row.children[0]), version: lines(row.children[3]), isCut: wrap.scrollWidth > wrap.clientWidth };
    })()`);
    expect(layout).toEqual({ name: 1, version: 1, isCut: false });
    await expect.poll(() => page.getByTestId('cluster-state').textContent()).toBe('Connected');
    expect(await page.getByRole('link', { name: 'region=eu' }).count()).toBe(1);
    await page.getByRole('region', { name: 'Rollouts' }).getByRole('link', { name: 'web' }).waitFor();
    await shoot(page, '3-cluster');
    // The node list reached the cluster as the signed-in user, impersonated by its agent.
    const shop = byName('shop-001');
    const read = shop.api.requests.find((r) => r.path.startsWith('/api/v1/nodes') && r.impersonatedUser !== undefined);
    expect(read?.impersonatedUser).toBe('edgeadm-hub-admin');
  });

  it('holds and releases a cluster from its page, as hub clusters hold does', async () => {
    const hold = page.getByRole('region', { name: 'Hold' });
    await hold.getByLabel('Reason').fill('opening hours');
    await hold.getByRole('button', { name: 'Hold' }).click();
    await hold.getByRole('button', { name: 'Release' }).waitFor();
    expect(await page.getByRole('region', { name: 'Overview' }).textContent()).toContain(
      'opening hours (by edgeadm-hub-admin since',
    );
    const held = await hubJson<{ hold?: { reason: string; by: string } }>(
      ['hub', 'clusters', 'get', 'shop-001'],
      hub.adminConfig,
    );
    expect(held.hold).toMatchObject({ reason: 'opening hours', by: 'edgeadm-hub-admin' });
    await hold.getByRole('button', { name: 'Release' }).click();
    await hold.getByRole('button', { name: 'Hold' }).waitFor();
    expect(
      (await hubJson<{ hold?: unknown }>(['hub', 'clusters', 'get', 'shop-001'], hub.adminConfig)).hold,
    ).toBeUndefined();
  });

  it('shows a cluster going offline without a reload', async () => {
    await page.goto(url('/ui/#/clusters'));
    const row = page.locator('tr[data-cluster="shop-002"] [data-state]');
    await expect.poll(() => row.getAttribute('data-state')).toBe('Connected');
    await page.evaluate(() => ((globalThis as unknown as { notReloaded: boolean }).notReloaded = true));
    await byName('shop-002').agent?.stop();
    await expect.poll(() => row.getAttribute('data-state'), { timeout: 30_000 }).toBe('Disconnected');
    expect(await page.evaluate(() => (globalThis as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    // Shown with when it was last seen: moments ago, not at the last periodic refresh of the store.
    const lastSeen = await page.locator('tr[data-cluster="shop-002"] td').nth(1).textContent();
    expect(lastSeen).toMatch(/^\d s ago$/);
    await shoot(page, '4-clusters-offline');
  });

  it('pauses a rollout from its page', async () => {
    await page.goto(url('/ui/#/rollouts'));
    await page.getByRole('link', { name: 'web' }).waitFor();
    await shoot(page, '5-rollouts');
    await page.getByRole('link', { name: 'web' }).click();
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    await shoot(page, '6-rollout');
    const status = await hubJson<{ state: string }>(['hub', 'rollout', 'status', 'web'], hub.adminConfig);
    expect(status.state).toBe('paused');
  });

  it('refuses a cross-site POST, from another site in the browser and by header', async () => {
    // A page of another site (localhost is another site than 127.0.0.1) that posts to the hub on load.
    const target = url('/ui/api/rollouts/web/resume');
    const evil: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(
        `<form id="f" method="POST" action="${target}"></form><script>document.getElementById('f').submit()</script>`,
      );
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    const evilPort = (evil.address() as { port: number }).port;
    const attacker = await admin.newPage();
    const answered = attacker.waitForResponse((response) => response.url() === target);
    await attacker.goto(`http://localhost:${evilPort}/`);
    const response = await answered;
    expect([401, 403]).toContain(response.status());
    await attacker.close();
    evil.close();

    // The same request with the admin's own session cookie but from another site, or without the CSRF header.
    const session = await signInDirect(hub, tokenOf(hub.adminConfig));
    const post = (headers: Record<string, string>) =>
      webRequest({
        ...hub,
        path: '/ui/api/rollouts/web/resume',
        method: 'POST',
        headers: { cookie: session.cookie, ...headers },
      });
    const crossSite = await post({ 'sec-fetch-site': 'cross-site', 'x-edgeadm-csrf': session.csrfToken });
    expect(crossSite.status).toBe(403);
    expect(crossSite.json.code).toBe('E_WEB_CSRF');
    const otherOrigin = await post({ origin: `http://localhost:${evilPort}`, 'x-edgeadm-csrf': session.csrfToken });
    expect(otherOrigin.status).toBe(403);
    const noToken = await post({ origin: url(''), 'sec-fetch-site': 'same-origin' });
    expect(noToken.status).toBe(403);
    // A hold is a command too: refused without the page's CSRF token, and nothing held.
    const hold = await webRequest({
      ...hub,
      path: '/ui/api/clusters/shop-001/hold?reason=forged',
      method: 'POST',
      headers: { cookie: session.cookie, origin: url(''), 'sec-fetch-site': 'same-origin' },
    });
    expect([hold.status, hold.json.code]).toEqual([403, 'E_WEB_CSRF']);
    expect(
      (await hubJson<{ hold?: unknown }>(['hub', 'clusters', 'get', 'shop-001'], hub.adminConfig)).hold,
    ).toBeUndefined();
    const status = await hubJson<{ state: string }>(['hub', 'rollout', 'status', 'web'], hub.adminConfig);
    expect(status.state).toBe('paused');
    // And the page's own request passes: the check is not refusing everything.
    const own = await post({ origin: url(''), 'sec-fetch-site': 'same-origin', 'x-edgeadm-csrf': session.csrfToken });
    expect(own.status).toBe(200);
    expect(own.json.state).toBe('progressing');
  });

  it('shows a scoped user only their clusters, in the page and through the API', async () => {
    const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 390, height: 800 } });
    const phone = await context.newPage();
    await phone.goto(url('/ui/'));
    await phone.getByLabel('Hub user token').fill(tokenOf(devConfig));
    await phone.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => phone.getByTestId('total').textContent()).toBe('1');
    await shoot(phone, '7-fleet-scoped-phone');
    await phone.goto(url('/ui/#/clusters'));
    await expect.poll(() => rowNames(phone)).toEqual(['lab-001']);
    await phone.goto(url('/ui/#/rollouts'));
    await phone.getByText('No rollouts you may see.').waitFor();

    const session: ApiSession = await signInDirect(hub, tokenOf(devConfig));
    const get = (path: string) => webRequest({ ...hub, path, headers: { cookie: session.cookie } });
    const listed = await get('/ui/api/clusters?limit=200');
    expect((listed.json.clusters as { name: string }[]).map((c) => c.name)).toEqual(['lab-001']);
    expect((await get('/ui/api/clusters?selector=env%3Dprod')).json.total).toBe(0);
    expect((await get('/ui/api/fleet')).json.total).toBe(1);
    expect((await get('/ui/api/clusters/shop-001')).status).toBe(404);
    expect((await get('/ui/api/clusters/shop-001/nodes')).status).toBe(403);
    expect((await get('/ui/api/rollouts')).json.rollouts).toEqual([]);
    expect((await get('/ui/api/rollouts/web')).status).toBe(404);
    const pause = await webRequest({
      ...hub,
      path: '/ui/api/rollouts/web/pause',
      method: 'POST',
      headers: { cookie: session.cookie, origin: url(''), 'x-edgeadm-csrf': session.csrfToken },
    });
    expect(pause.status).toBe(404);
    // Holds are for hub admins: their own cluster's page offers none, and the hub refuses one.
    expect((await get('/ui/api/clusters/lab-001')).json.mayHold).toBe(false);
    const holdOwn = await webRequest({
      ...hub,
      path: '/ui/api/clusters/lab-001/hold?reason=mine',
      method: 'POST',
      headers: { cookie: session.cookie, origin: url(''), 'x-edgeadm-csrf': session.csrfToken },
    });
    expect(holdOwn.status).toBe(403);
    // Their own cluster's page works, nodes included.
    expect((await get('/ui/api/clusters/lab-001/nodes')).json.nodes).toEqual([
      expect.objectContaining({ name: 'lab-001-node', ready: 'True' }),
    ]);

    // Sign-out ends the session on the hub, not only in the browser.
    await phone.goto(url('/ui/#/fleet'));
    const cookie = (await context.cookies()).find((c) => c.name === '__Secure-edgeadm-session');
    await phone.getByRole('button', { name: 'Sign out' }).click();
    await phone.getByLabel('Hub user token').waitFor();
    const after = await webRequest({
      ...hub,
      path: '/ui/api/clusters',
      headers: { cookie: `${cookie?.name}=${cookie?.value}` },
    });
    expect(after.status).toBe(401);
    await context.close();
  });
});
