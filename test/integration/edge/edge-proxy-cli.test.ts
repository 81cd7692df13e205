/**
 * Acceptance 1 of the edge autonomy issue, end to end: `edgeadm agent
 * edge-proxy` runs as a real process through the CLI, with the SIMULATED
 * API server (not kube-apiserver) as its upstream, and the real kubectl —
 * with its own token — lists pods through it while the upstream is up,
 * after the upstream is killed, and after the edge-proxy itself restarts
 * while the upstream is still down. Then the upstream returns and kubectl
 * sees fresh data.
 */
import { createServer } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type Options, type ResultPromise } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { REPO_ROOT } from '../../support/cli.js';
import {
  runKubectl,
  startSimApiServer,
  type KubeObject,
  type SimApiServer,
} from '../../support/sim-apiserver/index.js';

/** Safety net for the proxy process to start or for state it changes on its own; not a timing assertion. */
const READY_WAIT_MS = 30_000;
const KUBECTL_TOKEN = 'operator-token-for-edge-proxy-cli-test';

let dir: string;
let sim: SimApiServer;
let port: number;
let proxy: ResultPromise | undefined;
let output = '';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address() as { port: number };
      probe.close(() => resolve(free));
    });
  });
}

/** Starts `edgeadm agent edge-proxy` and waits for its "serving" line. */
async function startProxy(): Promise<string> {
  const args = [
    'agent',
    'edge-proxy',
    '--kubeconfig',
    join(dir, 'up.yaml'),
    '--listen',
    `127.0.0.1:${port}`,
    '--cache-dir',
    join(dir, 'cache'),
    '--metrics-listen',
    'none',
    '--health-interval',
    '1s',
  ];
  const binary = process.env.EDGEADM_BIN;
  const [file, fileArgs] = binary ? [binary, args] : [process.execPath, [join(REPO_ROOT, 'bin/run.js'), ...args]];
  output = '';
  // Typed as execa's Options: the child is then the ResultPromise that `proxy` holds.
  const options: Options = { reject: false, env: { EDGEADM_HOME: join(dir, 'home'), NO_COLOR: '1' }, stdin: 'ignore' };
  const child = execa(file, fileArgs, options);
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  proxy = child;
  const deadline = Date.now() + READY_WAIT_MS;
  while (!/edge-proxy serving .*\n/.test(output)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill();
      throw new Error(`edge-proxy did not start: ${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return /edge-proxy serving .*/.exec(output)![0];
}

async function stopProxy(): Promise<number | undefined> {
  if (!proxy) return undefined;
  proxy.kill('SIGTERM');
  const result = await proxy;
  proxy = undefined;
  return result.exitCode;
}

function kubeconfig(): string {
  const ca = readFileSync(join(dir, 'cache', 'pki', 'ca.crt'));
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: edge-proxy',
    '  cluster:',
    `    server: https://127.0.0.1:${port}`,
    `    certificate-authority-data: ${ca.toString('base64')}`,
    'users:',
    '- name: operator',
    '  user:',
    `    token: ${KUBECTL_TOKEN}`,
    'contexts:',
    '- name: edge-proxy',
    '  context: {cluster: edge-proxy, user: operator, namespace: default}',
    'current-context: edge-proxy',
    '',
  ].join('\n');
}

async function getPods(): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  return runKubectl(['get', 'pods', '--request-timeout=20s'], { kubeconfig: kubeconfig() });
}

function pod(name: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { nodeName: 'edge-1', containers: [{ name: 'main', image: 'registry.local/web:1' }] },
  } as KubeObject;
}

beforeAll(async () => {
  ensureCliBuilt('commands/agent/edge-proxy.js', ['src']);
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-edge-proxy-cli-'));
  sim = await startSimApiServer({
    tokens: { [KUBECTL_TOKEN]: { user: 'operator', groups: ['system:masters'] } },
    recordRequests: true,
  });
  sim.setObject(pod('web-1'));
  // The proxy's own kubeconfig: the upstream, its CA, and the probe's credentials.
  writeFileSync(join(dir, 'up.yaml'), sim.kubeconfig(), { mode: 0o600 });
  port = await freePort();
});

afterAll(async () => {
  await stopProxy();
  await sim?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('edgeadm agent edge-proxy with the real kubectl', () => {
  it('lists pods while the upstream is up, after it is killed, and after an offline restart of the proxy', async () => {
    expect(await startProxy()).toContain('(online)');
    const online = await getPods();
    expect(online.stderr).toBe('');
    expect(online.stdout).toMatch(/^web-1\s+/m);
    // kubectl's own token reached the upstream, not the proxy's identity.
    expect(sim.requests.filter((request) => request.resource === 'pods').map((request) => request.user)).toEqual([
      'operator',
    ]);

    await sim.kill();
    const offline = await getPods();
    expect(offline.exitCode).toBe(0);
    expect(offline.stdout).toMatch(/^web-1\s+/m);

    expect(await stopProxy()).toBe(0);
    expect(await startProxy()).toContain('offline: serving from the cache');
    const afterRestart = await getPods();
    expect(afterRestart.exitCode).toBe(0);
    expect(afterRestart.stdout).toMatch(/^web-1\s+/m);

    // Writes are refused offline with a message that says why.
    const write = await runKubectl(['create', 'configmap', 'during-outage'], { kubeconfig: kubeconfig() });
    expect(write.exitCode).not.toBe(0);
    expect(write.stderr).toContain('the API server is unreachable');

    // The upstream returns with a pod created meanwhile: kubectl sees fresh data.
    sim.setObject(pod('web-2'));
    await sim.restart();
    await expect
      .poll(async () => (await getPods()).stdout, { timeout: READY_WAIT_MS, interval: 500 })
      .toMatch(/^web-2\s+/m);
  });
});
