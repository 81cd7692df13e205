import { describe, expect, it } from 'vitest';
import { runSetupOnce, isSetupDone } from '../../../src/cluster/distribution-setup.js';
import { kubeadmDistribution } from '../../../src/cluster/distributions/kubeadm.js';
import type { NodeData } from '../../../src/cluster/node-context.js';
import { StateRecorder, emptyState } from '../../../src/cluster/state.js';
import type { ExecResult, Host } from '../../../src/hosts/host.js';

/** A host that records commands, fails those matching `failing`, and has the files in `files`. */
function fakeHost(options: { files?: string[]; failing?: RegExp } = {}) {
  const files = new Set(options.files ?? []);
  const commands: string[] = [];
  const host = {
    name: 'fake',
    async exec(command: string): Promise<ExecResult> {
      commands.push(command);
      const isFailing = options.failing?.test(command) === true;
      return { command, exitCode: isFailing ? 1 : 0, stdout: '', stderr: isFailing ? 'preflight failed' : '' };
    },
    async exists(path: string) {
      return files.has(path) || path === '/' || path === '/var' || path === '/var/lib';
    },
    async put(_source: unknown, path: string) {
      files.add(path);
      return { skipped: false, bytes: 0, sha256: '' };
    },
  };
  return { host: host as unknown as Host, commands, files };
}

function contextOn(host: Host, state = new StateRecorder(host, emptyState())): NodeData {
  return {
    host,
    isDryRun: false,
    role: 'control-plane',
    distribution: kubeadmDistribution,
    state,
    say: () => undefined,
  } as unknown as NodeData;
}

const INIT = /kubeadm init --config/;

describe('the distribution setup command (kubeadm init/join)', () => {
  it('runs once, records the configuration it ran with, and is then done', async () => {
    const { host, commands, files } = fakeHost();
    const ctx = contextOn(host);
    expect(await runSetupOnce(ctx, 'config A', false)).toBe(true);
    expect(commands.filter((c) => INIT.test(c))).toHaveLength(1);
    expect(ctx.state.state.setupDoneWith).toMatch(/^[0-9a-f]{64}$/);
    files.add(kubeadmDistribution.adminKubeconfigPath);
    expect(await isSetupDone(ctx, 'config A')).toBe(true);
    expect(await runSetupOnce(ctx, 'config A', true)).toBe(false);
    expect(commands.filter((c) => INIT.test(c))).toHaveLength(1);
  });

  it('is not done when what it made is gone (kubeadm reset by hand)', async () => {
    const { host } = fakeHost();
    const ctx = contextOn(host);
    await runSetupOnce(ctx, 'config A', false);
    expect(await isSetupDone(ctx, 'config A')).toBe(false);
  });

  it('clears the leftovers of an unfinished attempt with kubeadm reset first', async () => {
    const { host, commands } = fakeHost({ files: ['/etc/kubernetes/pki/ca.crt'] });
    await runSetupOnce(contextOn(host), 'config A', false);
    const reset = commands.findIndex((c) => c.includes('kubeadm reset -f'));
    expect(reset).toBeGreaterThanOrEqual(0);
    expect(reset).toBeLessThan(commands.findIndex((c) => INIT.test(c)));
  });

  it('rolls a failed attempt back with kubeadm reset and names the command', async () => {
    const { host, commands } = fakeHost({ failing: INIT });
    const ctx = contextOn(host);
    await expect(runSetupOnce(ctx, 'config A', false)).rejects.toMatchObject({
      code: 'E_DISTRIBUTION_SETUP_FAILED',
      message: expect.stringContaining('kubeadm init --config /etc/kubernetes/edgeadm-kubeadm-init.yaml failed'),
    });
    expect(commands.at(-1)).toContain('kubeadm reset -f');
    expect(ctx.state.state.setupDoneWith).toBeUndefined();
  });
});
