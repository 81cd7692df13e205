/**
 * The edge-proxy confined as its unit confines it, as far as can be done
 * without a running systemd (see test/support/unit-sandbox: the unit's
 * system call allow-list, MemoryDenyWriteExecute, RestrictAddressFamilies,
 * no capability, no new privileges, its Environment=; NOT its file system,
 * namespace or cgroup settings):
 * it starts, and the real kubectl lists pods through it. A call outside the
 * allow-list kills it here (the unit itself says EPERM), so nothing it needs
 * is refused. And without --jitless it cannot start under
 * MemoryDenyWriteExecute, which is why the unit must keep the two together.
 */
import { createServer } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type Options, type ResultPromise } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderEdgeProxyUnit } from '../../../src/cluster/edge-proxy-unit.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { REPO_ROOT } from '../../support/cli.js';
import { runKubectl, startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';
import { buildSeccompRun, sandboxed, sandboxUnavailable } from '../../support/unit-sandbox/index.js';

/** Safety net for the proxy process to start; not a timing assertion. */
const READY_WAIT_MS = 30_000;
const KUBECTL_TOKEN = 'operator-token-for-edge-proxy-sandbox-test';
const unavailable = sandboxUnavailable();

let dir: string;
let sim: SimApiServer;
let seccompRun: string;
const unit = renderEdgeProxyUnit({
  edgeadmBin: '/usr/local/bin/edgeadm',
  upstreamKubeconfig: '/k',
  cacheMaxBytes: '256Mi',
  cacheMaxEntries: 10000,
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Starts the proxy confined by `unitText`; resolves with the process once it serves, or with its output once it exits. */
async function startConfined(
  unitText: string,
  port: number,
): Promise<{ child: ResultPromise; output: () => string; isServing: boolean }> {
  const run = sandboxed({
    seccompRun,
    unitText,
    onRefused: 'kill',
    command: [
      process.execPath,
      join(REPO_ROOT, 'bin/run.js'),
      'agent',
      'edge-proxy',
      '--kubeconfig',
      join(dir, 'up.yaml'),
      '--listen',
      `127.0.0.1:${port}`,
      '--cache-dir',
      join(dir, `cache-${port}`),
      '--metrics-listen',
      'none',
    ],
  });
  let output = '';
  // Typed as execa's Options: the child is then the ResultPromise returned.
  const options: Options = {
    reject: false,
    env: { ...run.env, EDGEADM_HOME: join(dir, 'home'), NO_COLOR: '1' },
    extendEnv: false,
    stdin: 'ignore',
  };
  const child = execa(run.file, run.args, options);
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  // An abort ends it by a signal, which leaves exitCode null.
  let hasExited = false;
  child.once('exit', () => (hasExited = true));
  const deadline = Date.now() + READY_WAIT_MS;
  while (!/edge-proxy serving/.test(output)) {
    if (hasExited || Date.now() > deadline) {
      if (!hasExited) child.kill();
      await child;
      return { child, output: () => output, isServing: false };
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { child, output: () => output, isServing: true };
}

beforeAll(async () => {
  if (unavailable !== undefined) return;
  ensureCliBuilt('commands/agent/edge-proxy.js', ['src']);
  seccompRun = buildSeccompRun();
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-edge-proxy-sandbox-'));
  sim = await startSimApiServer({ tokens: { [KUBECTL_TOKEN]: { user: 'operator', groups: ['system:masters'] } } });
  sim.setObject({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web-1', namespace: 'default' },
    spec: { nodeName: 'edge-1', containers: [{ name: 'main', image: 'registry.local/web:1' }] },
  } as Parameters<SimApiServer['setObject']>[0]);
  writeFileSync(join(dir, 'up.yaml'), sim.kubeconfig(), { mode: 0o600 });
}, 120_000);

afterAll(async () => {
  await sim?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(unavailable !== undefined)(
  'the edge-proxy under its unit’s system call filter',
  { timeout: 120_000 },
  () => {
    it('serves kubectl with no capability, no new privileges, the allow-list, MemoryDenyWriteExecute and TCP/Unix sockets only', async () => {
      const port = await freePort();
      const proxy = await startConfined(unit, port);
      expect(proxy.isServing, proxy.output()).toBe(true);
      try {
        const status = readFileSync(`/proc/${proxy.child.pid}/status`, 'utf8');
        // Three filters: MemoryDenyWriteExecute, the address families and the allow-list.
        expect(status).toMatch(/^Seccomp:\s+2$/m);
        expect(status).toMatch(/^Seccomp_filters:\s+3$/m);
        expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
        expect(status).toMatch(/^CapBnd:\s+0+$/m);
        expect(status).toMatch(/^CapEff:\s+0+$/m);
        const ca = readFileSync(join(dir, `cache-${port}`, 'pki', 'ca.crt')).toString('base64');
        const kubeconfig = [
          'apiVersion: v1',
          'kind: Config',
          `clusters: [{name: p, cluster: {server: "https://127.0.0.1:${port}", certificate-authority-data: ${ca}}}]`,
          `users: [{name: o, user: {token: ${KUBECTL_TOKEN}}}]`,
          'contexts: [{name: p, context: {cluster: p, user: o, namespace: default}}]',
          'current-context: p',
          '',
        ].join('\n');
        const pods = await runKubectl(['get', 'pods', '--request-timeout=20s'], { kubeconfig });
        expect(pods.stderr).toBe('');
        expect(pods.stdout).toMatch(/^web-1\s+/m);
      } finally {
        proxy.child.kill('SIGTERM');
        await proxy.child;
      }
      // Stopped by SIGTERM, not by the filter (SIGSYS).
      expect(proxy.child.exitCode, proxy.output()).toBe(0);
    });

    it('cannot start under MemoryDenyWriteExecute without --jitless', async () => {
      const withJit = unit.replace(' --jitless', '');
      expect(withJit).not.toBe(unit);
      const proxy = await startConfined(withJit, await freePort());
      expect(proxy.isServing).toBe(false);
      expect(proxy.output()).toContain('SetPermissions');
    });
  },
);
