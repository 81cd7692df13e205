import { describe, expect, it } from 'vitest';
import type { ValidationError } from '../../../src/errors.js';
import { controlPlanesOf, upStages } from '../../../src/fleet/fleet-up.js';
import { parseInventory } from '../../../src/fleet/inventory/load-inventory.js';

function caught(run: () => unknown): ValidationError {
  try {
    run();
  } catch (error) {
    return error as ValidationError;
  }
  throw new Error('expected an error');
}

describe('controlPlanesOf', () => {
  it('returns the one control-plane host, with nothing to join', () => {
    const inventory = parseInventory(
      'all:\n  children:\n    control_plane:\n      hosts:\n        cp:\n    stores:\n      hosts:\n        s1:\n',
      'i.yaml',
    );
    const planes = controlPlanesOf(inventory);
    expect(planes.first.name).toBe('cp');
    expect(planes.joining).toEqual([]);
    expect(planes.endpoint).toBeUndefined();
  });

  it('inits the first control-plane host and joins the others in inventory order, through the endpoint', () => {
    const inventory = parseInventory(
      [
        'kind: FleetInventory',
        'controlPlane:',
        '  endpoint: k8s.example.internal:6443',
        '  hosts:',
        '    cp1: { address: 10.0.0.10 }',
        '    cp2: { address: 10.0.0.11 }',
        '    cp3: { address: 10.0.0.12 }',
        'nodeGroups:',
        '  stores:',
        '    hosts:',
        '      s1:',
      ].join('\n'),
      'inv.yaml',
    );
    const planes = controlPlanesOf(inventory);
    expect(planes.first.name).toBe('cp1');
    expect(planes.joining.map((host) => host.name)).toEqual(['cp2', 'cp3']);
    expect(planes.endpoint).toBe('k8s.example.internal:6443');
  });

  it('refuses an inventory without a control-plane host', () => {
    const none = parseInventory('all:\n  hosts:\n    s1:\n', 'i.yaml');
    const error = caught(() => controlPlanesOf(none));
    expect(error.code).toBe('E_FLEET_CONTROL_PLANE');
    expect(error.message).toMatch(/needs a control-plane host/);
  });

  it('refuses several control planes without an endpoint, naming the file, the line and the field, with a hint', () => {
    const edgeadm = parseInventory(
      'kind: FleetInventory\nssh: { user: root }\ncontrolPlane:\n  hosts:\n    a: { address: 10.0.0.1 }\n    b:\n',
      'inv.yaml',
    );
    const error = caught(() => controlPlanesOf(edgeadm));
    expect(error.code).toBe('E_INVENTORY');
    expect(error.message).toBe(
      'inv.yaml:3: controlPlane.endpoint: 2 control-plane hosts (a, b) need a control-plane endpoint, the one address nodes and joining control planes reach them at',
    );
    expect(error.hints.join('\n')).toMatch(/load balancer or DNS name/);
    expect(error.hints.join('\n')).toContain("To use a's address (10.0.0.1), write it there");

    const ansible = parseInventory(
      'all:\n  children:\n    masters:\n      hosts:\n        a:\n        b:\n    stores:\n      hosts:\n        s1:\n',
      'hosts.yml',
    );
    expect(caught(() => controlPlanesOf(ansible)).message).toMatch(
      /^hosts\.yml:3: all\.children\.masters\.vars\.control_plane_endpoint: 2 control-plane hosts \(a, b\) need/,
    );
  });
});

describe('upStages', () => {
  const [controlPlanes, nodes] = upStages({
    concurrency: 20,
    canary: 2,
    waveSize: { count: 5 },
    maxFailures: { count: 3 },
    retries: 2,
  });

  it('joins control planes one at a time, with the retries, and stops at the first that fails', () => {
    expect(controlPlanes!.rollout).toMatchObject({ concurrency: 1, retries: 2, maxFailures: { count: 0 } });
    expect(controlPlanes!.rollout.canary).toBeUndefined();
    // A wave each (newcomer point 23: as fleet plan numbers them), whatever --wave-size says for the nodes.
    expect(controlPlanes!.rollout.waveSize).toEqual({ count: 1 });
    expect(controlPlanes!.rollout.budgetStop?.reason).toBe('control-plane-failed');
    expect(controlPlanes!.blocksLaterStages?.message(['cp2'])).toMatch(/^not started: control plane cp2 did not join/);
  });

  it('rolls the nodes out with the flags', () => {
    expect(nodes!.rollout).toEqual({
      concurrency: 20,
      canary: 2,
      waveSize: { count: 5 },
      maxFailures: { count: 3 },
      retries: 2,
    });
    expect(nodes!.blocksLaterStages).toBeUndefined();
  });
});
