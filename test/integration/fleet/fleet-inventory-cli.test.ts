/**
 * `fleet plan` (which connects to nothing) against inventories whose host
 * fields an attacker or a typo chose: the real CLI refuses them before any
 * plan is printed, naming the file, the line, the host and the field.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli } from '../../support/cli.js';
import { printedBy } from '../../support/run-output.js';

function inventoryFile(name: string, text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'fleet-inventory-')), name);
  writeFileSync(path, text);
  return path;
}

describe('fleet plan: inventory host fields', { timeout: 120_000 }, () => {
  beforeAll(() => ensureCliBuilt('index.js', ['src']));

  it('refuses host names that would share a log file or split the plan, in both formats', async () => {
    const cases = [
      {
        file: inventoryFile(
          'fleet.yaml',
          'kind: FleetInventory\ncontrolPlane:\n  hosts:\n    cp1: { address: 10.0.0.1 }\nnodeGroups:\n  stores:\n    hosts:\n      a_b: { address: 10.0.0.2 }\n      "a b": { address: 10.0.0.3 }\n',
        ),
        message: /fleet\.yaml:9: nodeGroups\.stores\.hosts\.a b: host name "a b" is not valid/,
      },
      {
        file: inventoryFile(
          'hosts.yaml',
          'all:\n  children:\n    control_plane:\n      hosts:\n        cp1: { ansible_host: 10.0.0.1 }\n    stores:\n      hosts:\n        "store-1\\n  wave 1  evil (control-plane)": { ansible_host: 10.0.0.2 }\n',
        ),
        message: /hosts\.yaml:\d+: .*host name "store-1\\n {2}wave 1 {2}evil \(control-plane\)" is not valid/,
      },
      {
        file: inventoryFile(
          'user.yaml',
          'all:\n  hosts:\n    cp1: { ansible_host: 10.0.0.1, ansible_user: "root$(reboot)", edgeadm_role: control-plane }\n',
        ),
        message:
          /user\.yaml:3: all\.hosts\.cp1\.ansible_user: host cp1: SSH user "root\$\(reboot\)" is not a POSIX user name/,
      },
    ];
    for (const entry of cases) {
      const result = await runCli(['fleet', 'plan', '-i', entry.file, '--for', 'up']);
      expect(result.exitCode, result.stdout + result.stderr).toBe(3);
      expect(result.stderr).toContain('E_INVENTORY');
      expect(result.stderr).toMatch(entry.message);
      expect(result.stdout).not.toContain('wave');
    }
  });

  it('plans an inventory whose names and addresses are valid, one line per host', async () => {
    const file = inventoryFile(
      'fleet.yaml',
      'kind: FleetInventory\ncontrolPlane:\n  hosts:\n    cp1.example.com: {}\nnodeGroups:\n  stores:\n    labels: { example.com/tier: store }\n    hosts:\n      store_001: { address: "2001:db8::2" }\n',
    );
    const result = await runCli(['fleet', 'plan', '-i', file, '--for', 'up']);
    expect(result.exitCode, printedBy(result)).toBe(0);
    const lines = result.stdout.split('\n').filter((line) => line.includes('wave'));
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/store_001 \(worker, 2001:db8::2\)/);
  });
});
