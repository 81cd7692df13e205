// Takes docs/web-fleet.png, the README's picture of the hub's web view: a
// hub started in this process (the built lib/, so `npm run build` first),
// a small fleet of clusters registered and connected by edgeadm's real
// registration and tunnel agent (their API servers SIMULATED, from
// test/support, with three Kubernetes versions), a few of them then cut
// off and a few never connected, and the fleet view signed in as the admin
// in headless chromium (Debian's /usr/bin/chromium, via playwright-core).
//
//   npm run build && npm run screenshot:web [-- --out docs/web-fleet.png]
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type * as HubServerModule from '../src/hub/server/hub-server.js';
import type * as RegistrationModule from '../src/registration/registration.js';
import type * as AgentModule from '../src/tunnel/agent-loop.js';
import type * as UpstreamModule from '../src/tunnel/upstream.js';
import type * as SimModule from '../test/support/sim-apiserver/index.js';

const { values } = parseArgs({ options: { out: { type: 'string', default: 'docs/web-fleet.png' } } });
const root = fileURLToPath(new URL('..', import.meta.url));
/** A module of the built CLI, typed by its source. */
const built = (path: string): Promise<unknown> => import(new URL(`../lib/${path}`, import.meta.url).href);
const { startHub } = (await built('hub/server/hub-server.js')) as typeof HubServerModule;
const { registerCluster } = (await built('registration/registration.js')) as typeof RegistrationModule;
const { runTunnelAgent } = (await built('tunnel/agent-loop.js')) as typeof AgentModule;
const { Upstream, readUpstreamKubeconfig } = (await built('tunnel/upstream.js')) as typeof UpstreamModule;
const { startSimApiServer } = (await import('../test/support/sim-apiserver/index.js')) as typeof SimModule;
const { chromium } = await import('playwright-core');

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const work = mkdtempSync(join(tmpdir(), 'edgeadm-screenshot-web-'));
const hub = await startHub({ listen: '127.0.0.1:0', dataDir: join(work, 'hub'), logger: quiet });
const adminToken = /^token: (\S+)$/m.exec(readFileSync(hub.adminConfigPath, 'utf8'))?.[1] ?? '';
const ca = readFileSync(join(work, 'hub', 'pki', 'ca.crt'), 'utf8');
const { request } = await import('node:https');
const created = await new Promise<{ token: string }>((resolve, reject) => {
  request(
    `${hub.url}/hub/v1/tokens`,
    { method: 'POST', ca, headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' } },
    (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve(JSON.parse(body) as { token: string }));
    },
  )
    .on('error', reject)
    .end(JSON.stringify({ ttlMs: 600_000 }));
});

const sims = await Promise.all(
  ['v1.31.2+k3s1', 'v1.30.6+k3s1', 'v1.29.10+k3s1'].map((gitVersion) => startSimApiServer({ gitVersion })),
);
const REGIONS = ['eu-west', 'eu-north', 'us-east'];
const stops: AbortController[] = [];
const runs: Promise<void>[] = [];
const SITES = 42;
const NEVER_CONNECTED = 3;
const CUT_OFF = 6;
for (let i = 0; i < SITES; i += 1) {
  const name = `shop-${String(i + 1).padStart(3, '0')}`;
  const sim = sims[i % 7 === 0 ? 2 : i % 3 === 0 ? 1 : 0] as SimModule.SimApiServer;
  const kubeconfig = join(work, `${name}.kubeconfig`);
  writeFileSync(kubeconfig, sim.kubeconfig(), { mode: 0o600 });
  const { state } = await registerCluster({
    hub: new URL(hub.url).host,
    token: created.token,
    caCertHashes: [hub.caPin],
    cluster: name,
    labels: {
      env: i % 9 === 0 ? 'staging' : 'prod',
      region: REGIONS[i % REGIONS.length] as string,
      size: i % 5 === 0 ? 'large' : 'small',
    },
    kubeconfig,
    createServiceAccount: false,
    dataDir: join(work, name),
    discoveryTimeout: 30_000,
    logger: quiet,
  });
  if (i >= SITES - NEVER_CONNECTED) continue;
  const stop = new AbortController();
  stops.push(stop);
  const upstream = new Upstream(await readUpstreamKubeconfig(kubeconfig), quiet);
  runs.push(
    runTunnelAgent({
      hubServer: hub.url,
      hubCaPem: state.hubCaPem,
      identity: () => ({ cluster: name, certPem: state.certPem, keyPem: state.keyPem }),
      upstream,
      logger: quiet,
      signal: stop.signal,
    }).catch(() => undefined),
  );
}
// Let every agent connect, then cut a few off: they show as disconnected for moments.
await new Promise((resolve) => setTimeout(resolve, 3000));
for (const stop of stops.slice(0, CUT_OFF)) stop.abort();
await new Promise((resolve) => setTimeout(resolve, 1500));

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
const page = await browser.newPage({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 820 } });
await page.goto(`${hub.url}/ui/`);
await page.getByLabel('Hub user token').fill(adminToken);
await page.getByRole('button', { name: 'Sign in' }).click();
await page.getByTestId('total').waitFor();
await page.locator('[data-testid="total"]', { hasText: String(SITES) }).waitFor();
const out = join(root, values.out ?? 'docs/web-fleet.png');
await page.screenshot({ path: out });
console.log(`wrote ${out}`);
await browser.close();
for (const stop of stops) stop.abort();
await Promise.all(runs);
await hub.close();
await Promise.all(sims.map((sim) => sim.stop()));
process.exit(0);
