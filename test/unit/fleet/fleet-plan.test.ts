import { describe, expect, it } from 'vitest';
import { planFleet } from '../../../src/fleet/fleet-plan.js';
import { parseInventory } from '../../../src/fleet/inventory/load-inventory.js';

const INVENTORY = `kind: FleetInventory
ssh: { user: root, jump: ops@bastion }
controlPlane:
  hosts:
    cp1: { address: 10.0.0.10 }
    cp2: { address: 10.0.0.11 }
nodeGroups:
  stores:
    edge: true
    ssh: { port: 2222 }
    hosts:
      s1: { address: 10.1.0.1 }
      s2: { address: 10.1.0.2 }
`;

describe('planFleet', () => {
  const hosts = parseInventory(INVENTORY, 'inv.yaml').hosts;

  it('says per host how it is reached, in which wave, and what fleet up would do', () => {
    const plan = planFleet({ command: 'up', hosts, canary: 1, waveSize: { count: 2 } });
    expect(plan.map((entry) => [entry.host, entry.wave, entry.target, entry.action])).toEqual([
      ['cp1', 1, 'root@10.0.0.10', 'init the control plane (if not yet done) and create a join token'],
      ['cp2', 2, 'root@10.0.0.11', 'none: fleet up inits one control-plane host (more are not built yet)'],
      ['s1', 2, 'root@10.1.0.1:2222', 'join as edge node'],
      ['s2', 3, 'root@10.1.0.2:2222', 'join as edge node'],
    ]);
    expect(plan[0]!.via).toEqual(['ops@bastion']);
  });

  it('plans join, reset and check by role', () => {
    expect(planFleet({ command: 'join', hosts }).map((entry) => entry.action)[0]).toMatch(/^none/);
    expect(planFleet({ command: 'reset', hosts }).map((entry) => entry.action)).toEqual([
      'reset the control-plane node',
      'reset the control-plane node',
      'reset the edge node',
      'reset the edge node',
    ]);
    expect(planFleet({ command: 'check', hosts }).at(-1)!.action).toBe('host check for a worker node');
  });
});
