import { describe, expect, it } from 'vitest';
import { planFleet } from '../../../src/fleet/fleet-plan.js';
import { parseInventory } from '../../../src/fleet/inventory/load-inventory.js';

const INVENTORY = `kind: FleetInventory
ssh: { user: root, jump: ops@bastion }
controlPlane:
  endpoint: k8s.example.internal:6443
  hosts:
    cp1: { address: 10.0.0.10 }
    cp2: { address: 10.0.0.11 }
    cp3: { address: 10.0.0.12 }
nodeGroups:
  stores:
    edge: true
    ssh: { port: 2222 }
    hosts:
      s1: { address: 10.1.0.1 }
      s2: { address: 10.1.0.2 }
`;

describe('planFleet', () => {
  const inventory = parseInventory(INVENTORY, 'inv.yaml');
  const { hosts } = inventory;

  it('says per host how it is reached, in which wave, and what fleet up would do: init, control-plane joins one by one, node waves', () => {
    const plan = planFleet({
      command: 'up',
      hosts,
      canary: 1,
      waveSize: { count: 1 },
      controlPlaneEndpoint: inventory.controlPlaneEndpoint!,
    });
    const joinAsControlPlane =
      'join as control plane through k8s.example.internal:6443, after the ones before it; a failure stops the run';
    expect(plan.map((entry) => [entry.host, entry.role, entry.wave, entry.target, entry.action])).toEqual([
      [
        'cp1',
        'control-plane',
        1,
        'root@10.0.0.10',
        'init the first control plane for endpoint k8s.example.internal:6443 (if not yet done), upload the control-plane join credential and create a join token',
      ],
      ['cp2', 'control-plane', 2, 'root@10.0.0.11', joinAsControlPlane],
      ['cp3', 'control-plane', 3, 'root@10.0.0.12', joinAsControlPlane],
      ['s1', 'worker', 4, 'root@10.1.0.1:2222', 'join as edge node'],
      ['s2', 'worker', 5, 'root@10.1.0.2:2222', 'join as edge node'],
    ]);
    expect(plan[0]!.via).toEqual(['ops@bastion']);
  });

  it('plans one control plane as before: init, then the node waves', () => {
    const single = hosts.filter((host) => host.name !== 'cp2' && host.name !== 'cp3');
    const plan = planFleet({ command: 'up', hosts: single, canary: 1 });
    expect(plan.map((entry) => [entry.host, entry.wave, entry.action])).toEqual([
      ['cp1', 1, 'init the control plane (if not yet done) and create a join token'],
      ['s1', 2, 'join as edge node'],
      ['s2', 3, 'join as edge node'],
    ]);
  });

  it('plans join, reset and check by role', () => {
    expect(planFleet({ command: 'join', hosts }).map((entry) => entry.action)[0]).toMatch(/^none/);
    expect(planFleet({ command: 'reset', hosts }).map((entry) => entry.action)).toEqual([
      'reset the control-plane node',
      'reset the control-plane node',
      'reset the control-plane node',
      'reset the edge node',
      'reset the edge node',
    ]);
    expect(planFleet({ command: 'check', hosts }).at(-1)!.action).toBe('host check for a worker node');
  });
});
