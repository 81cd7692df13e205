import { describe, expect, it } from 'vitest';
import {
  STATE_FILE,
  StateRecorder,
  directoriesToRemove,
  emptyState,
  parseState,
  pathChain,
  recordDirectory,
  recordFile,
  recordService,
} from '../../../src/cluster/state.js';
import { DryRunHost } from '../../../src/hosts/dry-run-host.js';
import type { Host } from '../../../src/hosts/host.js';

describe('install state records', () => {
  it('records each path once, in the order written', () => {
    let state = emptyState();
    state = recordFile(state, '/usr/local/bin/k3s');
    state = recordFile(state, '/etc/rancher/k3s/config.yaml');
    state = recordFile(state, '/usr/local/bin/k3s');
    state = recordService(recordService(state, 'k3s.service'), 'k3s.service');
    state = recordDirectory(state, '/etc/rancher');
    expect(state.files).toEqual(['/usr/local/bin/k3s', '/etc/rancher/k3s/config.yaml']);
    expect(state.services).toEqual(['k3s.service']);
    expect(state.directories).toEqual(['/etc/rancher']);
  });

  it('survives a round trip through the state file and refuses garbage', () => {
    const state = recordFile(emptyState(), '/a');
    expect(parseState(JSON.stringify(state))).toEqual(state);
    expect(() => parseState('{oops')).toThrow(expect.objectContaining({ code: 'E_STATE_INVALID' }));
    expect(() => parseState('{"formatVersion": 99}')).toThrow(expect.objectContaining({ code: 'E_STATE_INVALID' }));
  });

  it('lists the chain of directories down to a path', () => {
    expect(pathChain('/var/lib/edgeadm/state')).toEqual([
      '/var',
      '/var/lib',
      '/var/lib/edgeadm',
      '/var/lib/edgeadm/state',
    ]);
  });

  it('removes directories deepest first, skipping those inside one that goes anyway', () => {
    expect(
      directoriesToRemove(['/etc/rancher', '/etc/rancher/k3s', '/var/lib/rancher/k3s', '/var/lib/edgeadm/packages/x']),
    ).toEqual(['/var/lib/edgeadm/packages/x', '/var/lib/rancher/k3s', '/etc/rancher']);
  });
});

describe('StateRecorder', () => {
  it('records the directories it creates that were missing, and writes the state file', async () => {
    const host = new DryRunHost({ name: 'plan' });
    const recorder = new StateRecorder(host, emptyState());
    await recorder.ensureDirectory('/var/lib/edgeadm/packages');
    recorder.file('/var/lib/edgeadm/packages/p.tar.gz');
    await recorder.save();
    // A DryRunHost without a real host answers "nothing there": every level counts as created.
    expect(recorder.state.directories).toContain('/var/lib/edgeadm/packages');
    expect([...recorder.state.files].sort()).toEqual([STATE_FILE, '/var/lib/edgeadm/packages/p.tar.gz'].sort());
    const written = host.plan.filter((step) => step.kind === 'put').map((step) => step.path);
    expect(written).toContain(STATE_FILE);
  });

  it('does not write the state file when nothing changed', async () => {
    const host = new DryRunHost({ name: 'plan' });
    const recorder = new StateRecorder(host, emptyState());
    await recorder.save();
    expect(host.plan).toHaveLength(0);
  });
});

/**
 * A stand-in for the real host behind a dry run: it answers the recorder's
 * existence checks (`for p in …; do if [ -e "$p" ] …`) from a set of paths,
 * and counts them.
 */
function existingPaths(paths: readonly string[]): { host: Host; checks: string[] } {
  const checks: string[] = [];
  const host = {
    name: 'real',
    // Nothing is there to compare an upload with.
    sha256: async () => undefined,
    exec: async (command: string) => {
      const listed = /^for p in (.*?); do/.exec(command);
      if (!listed) throw new Error(`unexpected read-only command: ${command}`);
      checks.push(command);
      const asked = listed[1]!.split(' ').map((word) => word.replace(/^'|'$/g, ''));
      const stdout = asked
        .filter((path) => paths.includes(path))
        .map((path) => `${path}\n`)
        .join('');
      return { exitCode: 0, stdout, stderr: '' };
    },
  } as unknown as Host;
  return { host, checks };
}

describe('StateRecorder.prepareDirectories', () => {
  it('asks once about every directory, records the missing ones in one save, then creates them in one command', async () => {
    const real = existingPaths(['/etc', '/var', '/var/lib', '/var/lib/edgeadm']);
    const host = new DryRunHost({ fallback: real.host });
    const recorder = new StateRecorder(host, emptyState(), ['/var', '/var/lib', '/var/lib/edgeadm']);
    const missing = await recorder.prepareDirectories({
      claim: ['/var/lib/rancher/k3s'],
      ensure: ['/etc/rancher/k3s', '/var/lib/edgeadm/services', '/var/lib/edgeadm/services'],
    });
    expect(missing).toEqual(['/etc/rancher/k3s', '/var/lib/edgeadm/services']);
    expect(real.checks).toHaveLength(1);
    expect(host.plan.map((step) => step.kind)).toEqual(['put', 'exec']);
    expect(host.plan[0]).toMatchObject({ path: STATE_FILE });
    expect(host.plan[1]!.command).toBe('mkdir -p /etc/rancher/k3s /var/lib/edgeadm/services');
    expect([...recorder.state.directories].sort()).toEqual(
      [
        '/etc/rancher',
        '/etc/rancher/k3s',
        '/var/lib/edgeadm/services',
        '/var/lib/edgeadm/state',
        '/var/lib/rancher',
        '/var/lib/rancher/k3s',
      ].sort(),
    );
    // Created and known now: asking again costs no command.
    await recorder.prepareDirectories({ ensure: ['/etc/rancher/k3s', '/var/lib/edgeadm/services'] });
    expect(real.checks).toHaveLength(1);
    expect(host.plan).toHaveLength(2);
  });

  it('records and saves, but leaves the creating to the caller when asked to', async () => {
    const real = existingPaths(['/var', '/var/lib', '/var/lib/edgeadm', '/var/lib/edgeadm/state']);
    const host = new DryRunHost({ fallback: real.host });
    const recorder = new StateRecorder(host, emptyState(), ['/var', '/var/lib', '/var/lib/edgeadm']);
    const missing = await recorder.prepareDirectories({
      ensure: ['/var/lib/rancher/k3s/agent/images'],
      isCreatedByCaller: true,
    });
    expect(missing).toEqual(['/var/lib/rancher/k3s/agent/images']);
    expect(host.plan.map((step) => step.kind)).toEqual(['put']);
    expect(recorder.state.directories).toContain('/var/lib/rancher/k3s/agent/images');
  });

  it('costs nothing when every directory exists', async () => {
    const real = existingPaths(['/etc', '/etc/rancher']);
    const host = new DryRunHost({ fallback: real.host });
    const recorder = new StateRecorder(host, emptyState(), []);
    expect(await recorder.prepareDirectories({ ensure: ['/etc/rancher'] })).toEqual([]);
    expect(host.plan).toHaveLength(0);
  });
});
