/**
 * `edgeadm host resolve` as a user runs it: the --help examples as printed
 * (from the repository, where examples/ssh_config is), --json, and a config
 * ssh refuses.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, runCli } from '../../support/cli.js';

describe('edgeadm host resolve', () => {
  it('runs every --help example as printed', async () => {
    const help = await runCli(['host', 'resolve', '--help']);
    const examples = [
      ...help.stdout.slice(help.stdout.indexOf('EXAMPLES')).matchAll(/^\s+\$ edgeadm (host resolve .*)$/gm),
    ].map((match) => match[1]!);
    expect(examples).toHaveLength(3);
    for (const example of examples) {
      const { exitCode, stdout, stderr } = await runCli(example.split(' '), { cwd: REPO_ROOT });
      expect(exitCode, `${example}\n${stderr}`).toBe(0);
      expect(stdout).toMatch(/nothing was connected|"target"/);
    }
  });

  it('prints the target and each jump host resolved, in the order they are connected', async () => {
    const { exitCode, stdout } = await runCli(
      ['host', 'resolve', 'store-042', '--ssh-config', 'examples/ssh_config', '--json'],
      { cwd: REPO_ROOT },
    );
    expect(exitCode).toBe(0);
    const resolution = JSON.parse(stdout) as { target: unknown; jumps: { name: string }[] };
    expect(resolution.target).toMatchObject({ user: 'root', address: '10.42.0.5', port: 22, isDefaultKeys: false });
    expect(resolution.jumps.map((hop) => hop.name)).toEqual(['bastion-eu', 'inner-bastion']);
  });

  it('refuses a config ssh refuses, with the line and a code', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'host-resolve-'));
    await writeFile(join(dir, 'config'), 'Host elsewhere\n  Port 22.0\n');
    const { exitCode, stdout } = await runCli([
      'host',
      'resolve',
      'web1',
      '--ssh-config',
      join(dir, 'config'),
      '--json',
    ]);
    expect(exitCode).toBe(3);
    expect(JSON.parse(stdout)).toMatchObject({
      error: { code: 'E_SSH_CONFIG', message: /config line 2: Bad port '22\.0'/ },
    });
  });
});
