/**
 * The simulated API server as a process (`node main.ts --listen --data-dir`),
 * the way the stand-in k3s launches it: it must run as plain TypeScript
 * under Node 24, announce readiness with files kubectl can use at once,
 * stop cleanly on SIGTERM, and carry its CA, admin token and objects over a
 * restart.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import type { Options, ResultPromise } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runKubectl } from '../../support/sim-apiserver/index.js';

const MAIN = fileURLToPath(new URL('../../support/sim-apiserver/main.ts', import.meta.url));
/** Safety net for the process to become ready (not a timing assertion). */
const READY_WAIT_MS = 20_000;

let dataDir: string;

async function startProcess(): Promise<{ child: ResultPromise; url: string }> {
  const options: Options = { reject: false };
  const child = execa(process.execPath, [MAIN, '--listen', '127.0.0.1:0', '--data-dir', dataDir], options);
  const deadline = Date.now() + READY_WAIT_MS;
  while (!existsSync(join(dataDir, 'ready'))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill();
      const result = await child;
      throw new Error(`the simulation did not become ready: ${String(result.stderr)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { child, url: (await readFile(join(dataDir, 'ready'), 'utf8')).trim() };
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sim-apiserver-main-'));
});

afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('sim-apiserver main.ts', () => {
  it('serves kubectl from its admin kubeconfig, stops on SIGTERM, and keeps CA, token and objects across a restart', async () => {
    const first = await startProcess();
    expect(first.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const kubeconfig = await readFile(join(dataDir, 'admin.kubeconfig'), 'utf8');
    expect(kubeconfig).toContain(first.url);
    const created = await runKubectl(['create', 'configmap', 'persisted', '--from-literal=k=v'], { kubeconfig });
    expect(created.exitCode).toBe(0);
    const ca = await readFile(join(dataDir, 'ca.crt'), 'utf8');
    const token = await readFile(join(dataDir, 'admin-token'), 'utf8');

    first.child.kill('SIGTERM');
    const stopped = await first.child;
    expect(stopped.exitCode).toBe(0);
    expect(String(stopped.stderr)).toContain('a simulation for tests, not kube-apiserver');
    expect(existsSync(join(dataDir, 'ready'))).toBe(false);

    const second = await startProcess();
    try {
      expect(await readFile(join(dataDir, 'ca.crt'), 'utf8')).toBe(ca);
      expect(await readFile(join(dataDir, 'admin-token'), 'utf8')).toBe(token);
      const again = await readFile(join(dataDir, 'admin.kubeconfig'), 'utf8');
      const value = await runKubectl(['get', 'configmap', 'persisted', '-o', 'jsonpath={.data.k}'], {
        kubeconfig: again,
      });
      expect(value).toMatchObject({ exitCode: 0, stdout: 'v' });
    } finally {
      second.child.kill('SIGTERM');
      await second.child;
    }
  });

  it('refuses to start without --listen and --data-dir', async () => {
    const result = await execa(process.execPath, [MAIN], { reject: false });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('--listen and --data-dir are required');
  });
});
