/** The inventory `fleet up --help` shows is one that edgeadm accepts, as printed (`npm run build` first). */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseInventory } from '../../../../src/fleet/inventory/load-inventory.js';

const cli = fileURLToPath(new URL('../../../../bin/run.js', import.meta.url));

describe('the inventory example in fleet up --help (newcomer point 9)', () => {
  it('parses as printed, with its control plane and edge node', () => {
    const help = execFileSync(process.execPath, [cli, 'fleet', 'up', '--help'], {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1', COLUMNS: '100' },
    });
    const lines = help.split('\n').map((line) => line.trim());
    const start = lines.indexOf('kind: FleetInventory');
    const end = lines.findIndex((line, i) => i > start && line === '');
    expect(start).toBeGreaterThan(-1);
    const inventory = parseInventory(lines.slice(start, end).join('\n'), 'fleet-up-help.yaml');
    expect(inventory.hosts.map((host) => [host.name, host.role, host.isEdge])).toEqual([
      ['cp1', 'control-plane', false],
      ['store-001', 'worker', true],
    ]);
  });
});
