/**
 * Opt-in: the main job against real hosts with real k3s. Skipped unless
 * EDGEADM_E2E_HOSTS is set (see README.md beside it). Runs the CLI as an
 * operator would, with systemd (no EDGEADM_SERVICE_MANAGER override).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

const hosts = (process.env.EDGEADM_E2E_HOSTS ?? '').split(',').filter(Boolean);
const pkg = process.env.EDGEADM_E2E_PACKAGE ?? '';
const key = process.env.EDGEADM_E2E_SSH_KEY;
/** Real k3s may take minutes to pull nothing and start on a small host. */
const E2E_TIMEOUT_MS = 15 * 60_000;

const dir = mkdtempSync(join(tmpdir(), 'edgeadm-e2e-'));
const ssh = (host: string): string[] => ['--host', host, ...(key ? ['--ssh-key', key] : [])];

describe.skipIf(hosts.length < 2 || pkg === '')('main job on real hosts (EDGEADM_E2E_HOSTS)', () => {
  afterAll(async () => {
    for (const host of hosts) await runCli(['reset', ...ssh(host), '--force'], { timeoutMs: E2E_TIMEOUT_MS });
  }, E2E_TIMEOUT_MS);

  it(
    'init, join, token list and reset',
    async () => {
      const kubeconfig = join(dir, 'admin.yaml');
      const init = await runCli(
        ['init', ...ssh(hosts[0]!), '--install-pkg-path', pkg, '--kubeconfig-out', kubeconfig, '--json'],
        { timeoutMs: E2E_TIMEOUT_MS },
      );
      expect(init.exitCode, init.stderr).toBe(0);
      const joinCommand = (JSON.parse(init.stdout) as { joinCommand: string }).joinCommand;
      for (const host of hosts.slice(1)) {
        const args = joinCommand.split(' ').slice(1);
        const run = await runCli([...args, ...ssh(host), '--json'], { timeoutMs: E2E_TIMEOUT_MS });
        expect(run.exitCode, run.stderr).toBe(0);
      }
      const list = await runCli(['token', 'list', '--kubeconfig', kubeconfig, '--json'], { timeoutMs: 60_000 });
      expect(list.exitCode, list.stderr).toBe(0);
    },
    E2E_TIMEOUT_MS,
  );
});
