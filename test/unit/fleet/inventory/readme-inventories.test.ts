/**
 * The inventories a new user copies from the fleet guide (docs/guides/fleet.md) and `fleet up --help`
 * must be ones edgeadm reads, and mean the same hosts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadInventory, parseInventory } from '../../../../src/fleet/inventory/load-inventory.js';
import { inventoryFlags } from '../../../../src/cli/flags/fleet-flags.js';

const README = readFileSync(new URL('../../../../docs/guides/fleet.md', import.meta.url), 'utf8');

function readmeInventories(): string[] {
  const section = README.slice(README.indexOf("An inventory in edgeadm's format"));
  return [...section.matchAll(/```yaml\n([\s\S]*?)```/g)].slice(0, 2).map((match) => match[1] as string);
}

describe('the inventories shown to users', () => {
  it("README's edgeadm and Ansible inventories are read as the same hosts, roles and edge flags", () => {
    const [edgeadm, ansible] = readmeInventories().map((text, index) => parseInventory(text, `README block ${index}`));
    expect(edgeadm?.format).toBe('edgeadm');
    expect(ansible?.format).toBe('ansible');
    const shape = (inventory: typeof edgeadm) =>
      inventory?.hosts.map((host) => ({
        name: host.name,
        address: host.address,
        role: host.role,
        isEdge: host.isEdge,
      }));
    expect(shape(edgeadm)).toEqual([
      { name: 'cp1', address: '10.0.0.10', role: 'control-plane', isEdge: false },
      { name: 'store-001', address: '10.1.0.1', role: 'worker', isEdge: true },
      { name: 'store-002', address: '10.1.0.2', role: 'worker', isEdge: true },
    ]);
    expect(shape(ansible)).toEqual(shape(edgeadm));
  });

  it("the example in -i's help is read too", () => {
    const help = String(inventoryFlags.inventory.description);
    const yaml = help.split('\n').slice(2).join('\n');
    expect(parseInventory(yaml, '--help').hosts.map((host) => host.name)).toEqual(['cp1', 'store-001']);
  });

  it('a missing inventory file is named plainly, with where to find an example', async () => {
    const error = await loadInventory('/nonexistent/inventory.yaml').catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      code: 'E_INVENTORY_READ',
      message: 'cannot read inventory /nonexistent/inventory.yaml: there is no such file',
    });
    expect((error as { hints: string[] }).hints.join(' ')).toContain('fleet up --help');
  });
});
