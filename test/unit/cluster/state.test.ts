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
