/** `edgeadm token generate`, run as the built CLI. */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliResult } from '../../support/cli.js';

let home: string;

function edgeadm(args: string[]): Promise<CliResult> {
  return runCli(args, { env: { EDGEADM_HOME: home } });
}

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'edgeadm-token-generate-'));
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe('edgeadm token generate', () => {
  it('prints one new token and nothing else, and keeps it out of the run log', async () => {
    const first = await edgeadm(['token', 'generate']);
    const second = await edgeadm(['token', 'generate']);
    expect(first.exitCode).toBe(0);
    expect(first.stderr).toBe('');
    expect(first.stdout).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}\n$/);
    expect(second.stdout).not.toBe(first.stdout);

    const logs = readdirSync(join(home, 'logs')).map((name) => readFileSync(join(home, 'logs', name), 'utf8'));
    expect(logs.join('\n')).not.toContain(first.stdout.trim().split('.')[1]);
  });

  it('prints {"token": ...} with --json', async () => {
    const result = await edgeadm(['token', 'generate', '--json']);
    expect(result.exitCode).toBe(0);
    const document = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(Object.keys(document)).toEqual(['token']);
    expect(document.token).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
  });
});
