import { describe, expect, it } from 'vitest';
import { controlPlaneOf } from '../../../src/fleet/fleet-up.js';
import { parseInventory } from '../../../src/fleet/inventory/load-inventory.js';

describe('controlPlaneOf', () => {
  it('returns the one control-plane host', () => {
    const { hosts } = parseInventory(
      'all:\n  children:\n    control_plane:\n      hosts:\n        cp:\n    stores:\n      hosts:\n        s1:\n',
      'i.yaml',
    );
    expect(controlPlaneOf(hosts).name).toBe('cp');
  });

  it('refuses none or several, since joining extra control planes is not built', () => {
    const none = parseInventory('all:\n  hosts:\n    s1:\n', 'i.yaml').hosts;
    expect(() => controlPlaneOf(none)).toThrow(/exactly one control-plane host in the inventory, not 0/);
    const two = parseInventory('masters:\n  hosts:\n    a:\n    b:\n', 'i.yaml').hosts;
    expect(() => controlPlaneOf(two)).toThrow(/not 2/);
  });
});
