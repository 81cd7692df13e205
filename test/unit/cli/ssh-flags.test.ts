import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hostConnectOptionsFromFlags } from '../../../src/cli/flags/ssh-flags.js';
import { Redactor } from '../../../src/log/redact.js';
import type { Logger } from '../../../src/log/run-log.js';

/** Every directory this file makes lives here, and goes when the file is done. */
const scratch = mkdtempSync(join(tmpdir(), 'eadm-flags-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function context(env: NodeJS.ProcessEnv = {}) {
  const warnings: string[] = [];
  const logger: Logger = { debug: () => {}, info: () => {}, error: () => {}, warn: (line) => warnings.push(line) };
  return { env, redactor: new Redactor(), logger, warnings };
}

function secretFile(content: string): string {
  const file = join(mkdtempSync(join(scratch, 'case-')), 'secret');
  writeFileSync(file, content);
  return file;
}

describe('SSH flags', () => {
  it('map to connection options', () => {
    const ctx = context();
    const options = hostConnectOptionsFromFlags(
      {
        host: 'root@10.0.0.5',
        'ssh-jump': ['ops@bastion:2222'],
        'ssh-key': ['/keys/a', '/keys/b'],
        'ssh-host-key-fingerprint': 'SHA256:abc',
        'ssh-accept-new': true,
        'ssh-known-hosts': '/kh',
        'ssh-config': '/cfg',
        'ssh-port': 2200,
        'ssh-timeout': 7,
      },
      ctx,
    );
    expect(options).toMatchObject({
      host: 'root@10.0.0.5',
      jumps: ['ops@bastion:2222'],
      keyFiles: ['/keys/a', '/keys/b'],
      hostKeyFingerprint: 'SHA256:abc',
      acceptNewHostKeys: true,
      knownHostsFile: '/kh',
      sshConfigFile: '/cfg',
      port: 2200,
      connectTimeoutMs: 7000,
    });
    expect(options.password).toBeUndefined();
  });

  it('read secrets from files (without the final newline) and the environment, and register them for redaction', () => {
    const ctx = context({ EDGEADM_SUDO_PASSWORD: 'sudo-from-env', EDGEADM_SSH_KEY_PASSPHRASE: 'phrase-from-env' });
    const options = hostConnectOptionsFromFlags(
      { host: 'admin@h', 'ssh-password-file': secretFile('login-from-file\n') },
      ctx,
    );
    expect(options).toMatchObject({
      password: 'login-from-file',
      sudoPassword: 'sudo-from-env',
      keyPassphrase: 'phrase-from-env',
    });
    expect(ctx.redactor.redact('login-from-file sudo-from-env phrase-from-env')).toBe(
      '<redacted> <redacted> <redacted>',
    );
  });

  it('prefer a password file to --ssh-password to the environment, and warn about --ssh-password', () => {
    const env = { EDGEADM_SSH_PASSWORD: 'from-env' };
    expect(hostConnectOptionsFromFlags({ host: 'h' }, context(env)).password).toBe('from-env');
    const ctx = context(env);
    expect(hostConnectOptionsFromFlags({ host: 'h', 'ssh-password': 'from-flag' }, ctx).password).toBe('from-flag');
    expect(ctx.warnings.join()).toContain('visible in the process list');
    const file = secretFile('from-file');
    expect(
      hostConnectOptionsFromFlags({ host: 'h', 'ssh-password': 'x', 'ssh-password-file': file }, context(env)).password,
    ).toBe('from-file');
  });

  it('refuse an empty or unreadable secret file', () => {
    expect(() => hostConnectOptionsFromFlags({ host: 'h', 'ssh-password-file': secretFile('\n') }, context())).toThrow(
      /is empty/,
    );
    expect(() =>
      hostConnectOptionsFromFlags({ host: 'h', 'sudo-password-file': '/nonexistent/pw' }, context()),
    ).toThrow(/cannot read --sudo-password-file/);
  });

  it('act on this machine without --host, where SSH flags make no sense', () => {
    expect(hostConnectOptionsFromFlags({}, context()).host).toBeUndefined();
    expect(() => hostConnectOptionsFromFlags({ 'ssh-jump': ['b'] }, context())).toThrow(/--ssh-jump needs --host/);
  });
});
