import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildCommandArgv, joinShellArgs, quoteShellArg, sudoPasswordPrefix } from '../../../src/hosts/shell.js';

/** Every directory this file makes lives here, and goes when the file is done. */
const scratch = mkdtempSync(join(tmpdir(), 'eadm-bin-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs a command line through a real sh and returns what the arguments became. */
function roundTrip(values: string[]): string[] {
  const out = execFileSync('sh', ['-c', `printf '%s\\0' ${values.map(quoteShellArg).join(' ')}`], { encoding: 'utf8' });
  return out.split('\0').slice(0, -1);
}

describe('shell quoting', () => {
  it('survives a real shell unchanged, whatever the characters', () => {
    const values = ['plain', '', "it's", '"double"', '$HOME `id` $(id)', 'a\nb', '\\', '*', '-n', 'ünïcode'];
    expect(roundTrip(values)).toEqual(values);
  });

  it('leaves safe words bare', () => {
    expect(quoteShellArg('/usr/local/bin/k3s')).toBe('/usr/local/bin/k3s');
    expect(joinShellArgs(['sh', '-c', 'echo hi'])).toBe("sh -c 'echo hi'");
  });
});

describe('buildCommandArgv', () => {
  it('runs the command under sh -c with cwd and env first', () => {
    const argv = buildCommandArgv({ command: 'echo "$A"', cwd: '/tmp', env: { A: "x'y" } });
    expect(argv.slice(0, 2)).toEqual(['sh', '-c']);
    expect(execFileSync(argv[0]!, argv.slice(1), { encoding: 'utf8' })).toBe("x'y\n");
  });

  it('refuses environment names a shell would misread', () => {
    expect(() => buildCommandArgv({ command: 'true', env: { 'A;rm -rf /': 'x' } })).toThrow(
      /invalid environment variable name/,
    );
  });

  it('wraps sudo so the password goes on stdin, never in argv', () => {
    expect(buildCommandArgv({ command: 'id', sudo: 'password' })).toEqual([
      'sudo',
      '-k',
      '-S',
      '-p',
      '',
      '--',
      'sh',
      '-c',
      'id',
    ]);
    expect(buildCommandArgv({ command: 'id', sudo: 'nopasswd' })).toEqual(['sudo', '-n', '--', 'sh', '-c', 'id']);
    expect(buildCommandArgv({ command: 'id', sudo: 'root' })).toEqual(['sh', '-c', 'id']);
    expect(sudoPasswordPrefix('s3cret').toString()).toBe('s3cret\n');
  });

  it("puts a timed command under the host's timeout, and runs it plainly where there is none", () => {
    const argv = buildCommandArgv({ command: 'echo ran', timeoutMs: 1500 });
    expect(argv[2]).toContain('timeout -k 2 2 sh -c "$1"');
    expect(argv[4]).toBe('echo ran');
    expect(execFileSync(argv[0]!, argv.slice(1), { encoding: 'utf8' })).toBe('ran\n');
    // A PATH with sh and nothing else: no timeout command to be found.
    const bin = mkdtempSync(join(scratch, 'case-'));
    symlinkSync('/bin/sh', join(bin, 'sh'));
    expect(execFileSync('/bin/sh', argv.slice(1), { encoding: 'utf8', env: { PATH: bin } })).toBe('ran\n');
  });
});
