/**
 * edgeadm reads Ansible inventories as Ansible does: 1,500 seeded YAML and
 * INI inventories (with group_vars/ and host_vars/) read by edgeadm and by
 * the real `ansible-inventory -i FILE --list`, compared host by host (name,
 * address, port, user, groups). Any difference fails with the smallest case
 * that still shows it. scripts/fuzz-inventories.ts runs more seeds.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ansibleInventoryLists,
  ansiblePython,
  formatInventoryFailure,
  fromAnsibleList,
  runInventoryDifferential,
} from '../../support/differential/ansible-inventory-differential.js';

const run = promisify(execFile);
const python = await ansiblePython();
// CI installs Ansible (.ci/run); elsewhere the suite is skipped when it is missing.
const isRunnable = python !== undefined || process.env['CI'] === 'true';

describe.skipIf(!isRunnable)('Ansible inventories: edgeadm against ansible-inventory --list', () => {
  let work: string;
  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'ansible-differential-'));
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it('the batch runner gives what the ansible-inventory command prints', async () => {
    const dir = join(work, 'cli');
    await mkdir(join(dir, 'group_vars'), { recursive: true });
    await writeFile(
      join(dir, 'hosts'),
      '[web]\nw[01:02]:2200 ansible_user=deploy\n[web:vars]\nansible_ssh_user=root\n',
    );
    await writeFile(join(dir, 'group_vars', 'web.yml'), 'ansible_host: 10.0.0.1\n');
    const { stdout } = await run('ansible-inventory', ['-i', join(dir, 'hosts'), '--list'], {
      cwd: work,
      env: { PATH: process.env['PATH'] ?? '', HOME: work, ANSIBLE_LOCAL_TEMP: join(work, '.tmp') },
    });
    const batch = await ansibleInventoryLists(python!, [join(dir, 'hosts')], work);
    expect(batch.get(join(dir, 'hosts'))).toEqual(fromAnsibleList(JSON.parse(stdout)));
    expect(fromAnsibleList(JSON.parse(stdout))).toMatchObject({
      hosts: [
        { name: 'w01', address: '10.0.0.1', port: 2200, user: 'root', groups: ['web'] },
        { name: 'w02', address: '10.0.0.1', port: 2200, user: 'root', groups: ['web'] },
      ],
    });
  });

  it('1,500 generated inventories resolve to the same hosts, or both refuse them', async () => {
    const report = await runInventoryDifferential({ python: python!, first: 1, cases: 1500, workDir: work });
    const shown = report.failures.map(formatInventoryFailure).join('\n');
    expect(report.failures, shown).toEqual([]);
    // The generator must keep producing hosts to compare, not only refusals.
    expect(report.hosts).toBeGreaterThan(7_500);
    expect(report.refusals).toBeLessThan(report.cases / 5);
  }, 240_000);
});
