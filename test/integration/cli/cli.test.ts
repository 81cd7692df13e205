/**
 * The CLI as a user meets it: help, version and
 * errors outside any command, run as a subprocess (bin/run.js, or the single
 * binary when EDGEADM_BIN is set).
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../support/cli.js';

const TOPICS = [
  'init',
  'join',
  'reset',
  'token',
  'certs',
  'config',
  'package',
  'host',
  'hub',
  'register-cloud',
  'kubeconfig',
  'kubectl',
  'agent',
  'fleet',
];

describe('edgeadm --help', () => {
  it('lists every topic of the tool with a one-line summary', async () => {
    const { exitCode, stdout } = await runCli(['--help']);
    expect(exitCode).toBe(0);
    for (const topic of TOPICS) expect(stdout).toMatch(new RegExp(`^ {2}${topic} +\\S`, 'm'));
  });

  it('shows examples for every command', async () => {
    const { stdout } = await runCli(['version', '--help']);
    expect(stdout).toContain('EXAMPLES');
    expect(stdout).toContain('$ edgeadm version --json');
    expect(stdout).toContain('GLOBAL FLAGS');
    expect(stdout).toContain('--json');
    expect(stdout).toContain('--log-file');
  });
});

describe('edgeadm version', () => {
  it('reports version, commit, Node version, platform and arch as JSON', async () => {
    const { exitCode, stdout } = await runCli(['version', '--json']);
    expect(exitCode).toBe(0);
    const report = JSON.parse(stdout) as Record<string, unknown>;
    expect(report).toMatchObject({ platform: process.platform, arch: process.arch });
    expect(report.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(report.node).toMatch(/^v24\./);
    expect(typeof report.commit).toBe('string');
  });

  it('prints one human line without --json', async () => {
    const { stdout } = await runCli(['version']);
    expect(stdout).toMatch(/^edgeadm version \d+\.\d+\.\d+ \(commit \S+, node v24\.\S+, linux\/\w+\)\n$/);
  });
});

describe('errors outside any command', () => {
  it('an unknown command exits 3 with a hint', async () => {
    const { exitCode, stderr } = await runCli(['frobnicate']);
    expect(exitCode).toBe(3);
    expect(stderr).toContain('code: E_UNKNOWN_COMMAND');
    expect(stderr).toContain('edgeadm --help');
  });

  it('an unknown command with --json gives one JSON error document', async () => {
    const { exitCode, stdout } = await runCli(['frobnicate', '--json']);
    expect(exitCode).toBe(3);
    expect(JSON.parse(stdout)).toMatchObject({ error: { code: 'E_UNKNOWN_COMMAND' } });
  });

  it('an unknown flag on a built command is a usage error, exit 3', async () => {
    const { exitCode, stderr } = await runCli(['version', '--bogus']);
    expect(exitCode).toBe(3);
    expect(stderr).toContain('code: E_USAGE');
  });
});
