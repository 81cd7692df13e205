/**
 * BaseCommand behaviour: the --json documents, exit codes per error class,
 * redaction of secrets in run logs, and colour rules. Commands are run
 * in-process through oclif with the real package config.
 */
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Config, Errors, Flags } from '@oclif/core';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { BaseCommand } from '../../../src/cli/base-command.js';
import { notBuiltCommand } from '../../../src/cli/not-built.js';
import { EdgeadmError, PreflightError, ValidationError } from '../../../src/errors.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const TOKEN = 'abcdef.0123456789abcdef';
const PASSWORD = 'hunter2-very-secret';

class Succeeds extends BaseCommand<typeof Succeeds> {
  static override flags = { token: Flags.string(), 'sudo-password': Flags.string(), name: Flags.string() };
  async run(): Promise<{ ok: boolean; name: string | undefined }> {
    this.logger.info(`joining with token ${this.flags.token} and password ${this.flags['sudo-password']}`);
    this.log('human line');
    return { ok: true, name: this.flags.name };
  }
}
class FailsWith extends BaseCommand<typeof FailsWith> {
  static error: unknown;
  async run(): Promise<never> {
    this.redactor.addSecret(PASSWORD);
    this.logger.info(`sudo password is ${PASSWORD}`);
    throw FailsWith.error;
  }
}

let config: Config;
let home: string;
let stdout: string;
let stderr: string;

beforeAll(async () => {
  config = await Config.load(root);
});

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'edgeadm-test-home-'));
  vi.stubEnv('EDGEADM_HOME', home);
  vi.stubEnv('NO_COLOR', '1');
  stdout = '';
  stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += chunk.toString();
    return true;
  });
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += chunk.toString();
    return true;
  });
});

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
  process.exitCode = undefined;
});

/** Runs a command class and returns its exit code (0 when it returned). */
async function runCommand(cmd: typeof BaseCommand, argv: string[]): Promise<number> {
  try {
    await (cmd as unknown as { run(argv: string[], config: Config): Promise<unknown> }).run(argv, config);
    return 0;
  } catch (error) {
    if (error instanceof Errors.ExitError) return error.oclif.exit ?? 1;
    throw error;
  }
}

function onlyLog(): string {
  const files = readdirSync(join(home, 'logs'));
  expect(files).toHaveLength(1);
  return readFileSync(join(home, 'logs', files[0]!), 'utf8');
}

describe('--json', () => {
  it('prints exactly one JSON document, the result, on success', async () => {
    const code = await runCommand(Succeeds as unknown as typeof BaseCommand, ['--json', '--name', 'edge-1']);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({ ok: true, name: 'edge-1' });
    expect(stdout).not.toContain('human line');
  });

  it('prints exactly one JSON error document on failure, with code, exit code and hints', async () => {
    FailsWith.error = new ValidationError('bad --node-name "A_B"', {
      code: 'E_NODE_NAME',
      hints: ['use a DNS-1123 name'],
    });
    const code = await runCommand(FailsWith as unknown as typeof BaseCommand, ['--json']);
    expect(code).toBe(3);
    const doc = JSON.parse(stdout) as { error: Record<string, unknown> };
    expect(doc.error).toMatchObject({
      code: 'E_NODE_NAME',
      message: 'bad --node-name "A_B"',
      exitCode: 3,
      hints: ['use a DNS-1123 name'],
    });
    expect(doc.error.logFile).toMatch(/\.log$/);
    expect(stderr).toBe('');
  });

  it('renders a flag parse error as a JSON usage error with exit code 3', async () => {
    const code = await runCommand(Succeeds as unknown as typeof BaseCommand, ['--json', '--no-such-flag']);
    expect(code).toBe(3);
    expect((JSON.parse(stdout) as { error: { code: string } }).error.code).toBe('E_USAGE');
  });
});

class NeedsFlags extends BaseCommand<typeof NeedsFlags> {
  static override id = 'hub:serve';
  static override flags = {
    listen: Flags.string({ required: true }),
    'data-dir': Flags.string({ required: true }),
    host: Flags.string(),
  };
  async run(): Promise<void> {}
}

describe('usage errors', () => {
  it('names every missing required flag, in text and in --json (newcomer point 2)', async () => {
    const code = await runCommand(NeedsFlags as unknown as typeof BaseCommand, ['--json']);
    expect(code).toBe(3);
    const doc = JSON.parse(stdout) as { error: { code: string; message: string; hints: string[] } };
    expect(doc.error.code).toBe('E_USAGE');
    expect(doc.error.message).toContain('missing required flag --listen');
    expect(doc.error.message).toContain('missing required flag --data-dir');
    expect(doc.error.message).not.toMatch(/following error/i);
    expect(doc.error.hints).toEqual(['Run "edgeadm hub serve --help" for usage.']);

    stdout = '';
    await runCommand(NeedsFlags as unknown as typeof BaseCommand, []);
    expect(stderr).toMatch(/error: .*missing required flag --listen/);
    expect(stderr).not.toContain('hub:serve');
  });

  it('takes a flag with no value for a usage error, not an internal one (newcomer point 17)', async () => {
    const code = await runCommand(NeedsFlags as unknown as typeof BaseCommand, [
      '--listen',
      'x',
      '--data-dir',
      'y',
      '--host',
    ]);
    expect(code).toBe(3);
    expect(stderr).toContain('Flag --host expects a value');
    expect(stderr).toContain('code: E_USAGE');
    expect(stderr).not.toContain('unexpected');
  });
});

describe('exit codes per error class', () => {
  const cases: Array<[string, unknown, number, string]> = [
    ['validation', new ValidationError('bad input', { code: 'E_BAD' }), 3, 'E_BAD'],
    ['preflight', new PreflightError('port 6443 is in use', { code: 'E_PREFLIGHT_PORT' }), 2, 'E_PREFLIGHT_PORT'],
    ['general', new EdgeadmError('upload failed', { code: 'E_UPLOAD' }), 1, 'E_UPLOAD'],
    ['unexpected', new TypeError('x is undefined'), 1, 'E_INTERNAL'],
  ];
  for (const [name, error, exitCode, errorCode] of cases) {
    it(`${name} error exits ${exitCode} and shows code ${errorCode}`, async () => {
      FailsWith.error = error;
      const code = await runCommand(FailsWith as unknown as typeof BaseCommand, []);
      expect(code).toBe(exitCode);
      expect(stderr).toContain(`code: ${errorCode}`);
      expect(stderr).toMatch(/^error: /);
    });
  }

  it('shows hints and the log path under the message', async () => {
    FailsWith.error = new PreflightError('swap is on', { code: 'E_SWAP', hints: ['run swapoff -a'] });
    await runCommand(FailsWith as unknown as typeof BaseCommand, []);
    expect(stderr).toContain('hint: run swapoff -a');
    expect(stderr).toMatch(/log: {2}.*\.log/);
  });
});

describe('run log', () => {
  it('records the run with tokens and registered secrets redacted', async () => {
    await runCommand(Succeeds as unknown as typeof BaseCommand, [
      '--token',
      TOKEN,
      '--sudo-password',
      PASSWORD,
      '--name',
      'n1',
    ]);
    const log = onlyLog();
    expect(log).not.toContain(PASSWORD);
    expect(log).toContain('abcdef.<redacted>');
    expect(log).not.toContain('0123456789abcdef');
    expect(log).toContain('n1');
  });

  it('redacts secrets in error messages, on stderr and in the log', async () => {
    FailsWith.error = new EdgeadmError(`sudo failed for password ${PASSWORD} and token ${TOKEN}`, { code: 'E_SUDO' });
    await runCommand(FailsWith as unknown as typeof BaseCommand, []);
    const log = onlyLog();
    for (const text of [stderr, log]) {
      expect(text).not.toContain(PASSWORD);
      expect(text).not.toContain('0123456789abcdef');
      expect(text).toContain('<redacted>');
    }
  });

  it('keeps the stack trace of an unexpected error in the log, not on the terminal', async () => {
    FailsWith.error = new TypeError('boom');
    await runCommand(FailsWith as unknown as typeof BaseCommand, []);
    expect(onlyLog()).toMatch(/TypeError: boom\n\s+at /);
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it('writes to --log-file when given, with mode 0600', async () => {
    const file = join(home, 'custom', 'run.log');
    await runCommand(Succeeds as unknown as typeof BaseCommand, ['--log-file', file]);
    const { statSync } = await import('node:fs');
    expect(readFileSync(file, 'utf8')).toContain('done');
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('echoes debug lines on stderr with --verbose, redacted', async () => {
    await runCommand(Succeeds as unknown as typeof BaseCommand, [
      '--verbose',
      '--token',
      TOKEN,
      '--sudo-password',
      PASSWORD,
    ]);
    expect(stderr).toContain('joining with token abcdef.<redacted>');
    expect(stderr).not.toContain(PASSWORD);
  });
});

describe('a command that is not built yet', () => {
  const NotBuilt = notBuiltCommand({ summary: 'Do a planned thing.', examples: ['<%= config.bin %> planned thing'] });

  it('says so plainly, does nothing and exits 3, whatever flags it gets', async () => {
    const code = await runCommand(NotBuilt, ['--some-future-flag', 'x', 'positional']);
    expect(code).toBe(3);
    expect(stderr).toContain('is not built yet');
    expect(stderr).toContain('code: E_NOT_BUILT');
  });

  it('gives a JSON error document with --json', async () => {
    const code = await runCommand(NotBuilt, ['--json']);
    expect(code).toBe(3);
    expect(JSON.parse(stdout)).toMatchObject({ error: { code: 'E_NOT_BUILT', exitCode: 3 } });
  });

  it('is marked in its help summary', () => {
    expect(NotBuilt.summary).toBe('Do a planned thing. (not built yet)');
  });
});
