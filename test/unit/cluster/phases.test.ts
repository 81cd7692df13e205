import { describe, expect, it } from 'vitest';
import { k3sDistribution } from '../../../src/cluster/distributions/k3s.js';
import { kubeadmDistribution } from '../../../src/cluster/distributions/kubeadm.js';
import { initPhases } from '../../../src/cluster/init.js';
import { joinPhases } from '../../../src/cluster/join.js';
import { resetPhases } from '../../../src/cluster/reset.js';
import { describePhases, flattenPhases } from '../../../src/workflow/phase.js';

describe('phase trees', () => {
  it('init runs its phases in the documented order', () => {
    expect(flattenPhases(initPhases()).map((p) => p.path)).toEqual([
      'preflight',
      'package',
      'runtime',
      'egress-selector',
      'control-plane',
      'wait-ready',
      'bootstrap-token',
      'record-package',
      'upload-certs',
      'edge-addons',
      'edge-kube-proxy',
      'edge-autonomy',
      'edge-site-grids',
      'node-tunnel',
      'show-join-command',
    ]);
  });

  it('join verifies the cluster before the package reaches the host', () => {
    const paths = flattenPhases(joinPhases()).map((p) => p.path);
    expect(paths).toEqual([
      'preflight',
      'discovery',
      'package',
      'runtime',
      'node-join',
      'egress-selector',
      'control-plane-join',
      'edge',
      'wait-ready',
      'labels',
      'node-tunnel',
    ]);
    expect(paths.indexOf('discovery')).toBeLessThan(paths.indexOf('package'));
  });

  it('reset removes the state last', () => {
    expect(
      flattenPhases(resetPhases())
        .map((p) => p.path)
        .at(-1),
    ).toBe('remove-state');
  });

  it('runtime runs only for a distribution with a separate runtime, and says why not for k3s', () => {
    const phase = initPhases().find((p) => p.name === 'runtime')!;
    expect(phase.runIf?.({ distribution: k3sDistribution } as never)).toBe(false);
    expect(phase.skipReason?.({ distribution: k3sDistribution } as never)).toBe(
      'k3s embeds its own container runtime (containerd)',
    );
    expect(phase.runIf?.({ distribution: kubeadmDistribution } as never)).toBe(true);
  });

  it('labels runs only when labels were asked for or the node is an edge node (newcomer point 27)', () => {
    const phase = joinPhases().find((p) => p.name === 'labels')!;
    expect(phase.runIf?.({ enableEdge: false, nodeLabels: {} } as never)).toBe(false);
    expect(phase.skipReason?.({} as never)).toBe('no --node-labels given');
    expect(phase.runIf?.({ enableEdge: false, nodeLabels: { zone: 'a' } } as never)).toBe(true);
    expect(phase.runIf?.({ enableEdge: true, nodeLabels: {} } as never)).toBe(true);
  });

  it('edge-addons runs only with --enable-edge', () => {
    const phase = initPhases().find((p) => p.name === 'edge-addons')!;
    expect(phase.runIf?.({ enableEdge: false } as never)).toBe(false);
    expect(phase.runIf?.({ enableEdge: true } as never)).toBe(true);
  });

  it('lists the tree for --help with each summary', () => {
    const help = describePhases(initPhases());
    expect(help.split('\n')).toHaveLength(15);
    expect(help).toMatch(/^preflight\s+Run the pre-flight checks/);
  });
});
