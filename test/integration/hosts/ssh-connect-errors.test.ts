/**
 * Connecting to real sshd test hosts: host key verification (known_hosts,
 * hashed entries, pins, trust on first use), authentication (keys, encrypted
 * keys, passwords) and the distinct errors for each way it can go wrong.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHost } from '../../../src/hosts/connect.js';
import type { EdgeadmError } from '../../../src/errors.js';
import { hashKnownHostsName } from '../../../src/hosts/known-hosts.js';
import { connectOptionsFor, emptyHome } from '../../support/test-host-connect.js';
import { TEST_SUDO_USER, startTestHosts, type TestHosts } from '../../support/test-hosts.js';

let env: TestHosts;

beforeAll(async () => {
  env = await startTestHosts({ count: 3, bastion: true });
});

afterAll(async () => {
  await env?.teardown();
});

/** Connects, runs `hostname`, closes; returns the hostname or the error. */
async function tryConnect(options: Parameters<typeof connectHost>[0]): Promise<string | EdgeadmError> {
  try {
    const host = await connectHost(options);
    try {
      return (await host.exec('hostname')).stdout.trim();
    } finally {
      await host.close();
    }
  } catch (error) {
    return error as EdgeadmError;
  }
}

function knownHostsFile(lines: string[]): string {
  const file = join(emptyHome(env), 'known_hosts');
  writeFileSync(file, lines.map((line) => `${line}\n`).join(''));
  return file;
}

describe('host keys', () => {
  it('refuses an unknown host, printing its fingerprint and how to accept it', async () => {
    const bastion = env.bastion!;
    const result = await tryConnect(connectOptionsFor(env, bastion, { knownHostsFile: knownHostsFile([]) }));
    expect(result).toMatchObject({ code: 'E_SSH_HOST_KEY_UNKNOWN' });
    const error = result as EdgeadmError;
    expect(error.message).toContain(bastion.hostKeyFingerprint);
    expect(error.hints.join('\n')).toContain('--ssh-accept-new');
    expect(error.hints.join('\n')).toContain(`--ssh-host-key-fingerprint ${bastion.hostKeyFingerprint}`);
    expect(error.details).toMatchObject({ fingerprint: bastion.hostKeyFingerprint, keyType: 'ssh-ed25519' });
  });

  it('with --ssh-accept-new trusts on first use and records the key, then knows the host', async () => {
    const file = knownHostsFile([]);
    const target = env.targets[0]!;
    const warnings: string[] = [];
    const logger = { debug: () => {}, info: () => {}, error: () => {}, warn: (line: string) => warnings.push(line) };
    const first = await tryConnect(
      connectOptionsFor(env, target, { knownHostsFile: file, acceptNewHostKeys: true, logger }),
    );
    expect(first).toBe(target.name);
    // Both the bastion and the target were new; both are recorded, loudly.
    const recorded = readFileSync(file, 'utf8');
    expect(recorded).toContain(`${target.address} ${target.hostPublicKey}`);
    expect(recorded).toContain(`${env.bastion!.address} ${env.bastion!.hostPublicKey}`);
    expect(warnings.filter((w) => w.includes('TRUSTED ON FIRST USE'))).toHaveLength(2);
    expect(warnings.join('\n')).toContain(target.hostKeyFingerprint);

    const again = await tryConnect(connectOptionsFor(env, target, { knownHostsFile: file }));
    expect(again).toBe(target.name);
  });

  it('refuses a host whose key differs from known_hosts, even with --ssh-accept-new', async () => {
    const [bastion, other] = [env.bastion!, env.targets[1]!];
    // The bastion's address, with another host's key on record.
    const file = knownHostsFile([`${bastion.address} ${other.hostPublicKey}`]);
    for (const acceptNewHostKeys of [false, true]) {
      const result = await tryConnect(connectOptionsFor(env, bastion, { knownHostsFile: file, acceptNewHostKeys }));
      expect(result).toMatchObject({ code: 'E_SSH_HOST_KEY_MISMATCH' });
      expect((result as EdgeadmError).message).toContain(bastion.hostKeyFingerprint);
      expect((result as EdgeadmError).message).toContain(other.hostKeyFingerprint);
    }
    expect(readFileSync(file, 'utf8')).toBe(`${bastion.address} ${other.hostPublicKey}\n`);
  });

  it('checks the host behind the bastion too: a mismatch there is refused', async () => {
    const [bastion, target, other] = [env.bastion!, env.targets[0]!, env.targets[1]!];
    const file = knownHostsFile([
      `${bastion.address} ${bastion.hostPublicKey}`,
      `${target.address} ${other.hostPublicKey}`,
    ]);
    const result = await tryConnect(connectOptionsFor(env, target, { knownHostsFile: file }));
    expect(result).toMatchObject({ code: 'E_SSH_HOST_KEY_MISMATCH' });
    expect((result as EdgeadmError).message).toContain(`root@${target.address}:22`);
  });

  it('accepts hashed known_hosts entries', async () => {
    const bastion = env.bastion!;
    const file = knownHostsFile([`${hashKnownHostsName(bastion.address)} ${bastion.hostPublicKey}`]);
    expect(await tryConnect(connectOptionsFor(env, bastion, { knownHostsFile: file }))).toBe(bastion.name);
  });

  it('trusts a pinned fingerprint without known_hosts, and refuses any other key', async () => {
    const bastion = env.bastion!;
    const empty = knownHostsFile([]);
    const pinned = await tryConnect(
      connectOptionsFor(env, bastion, { knownHostsFile: empty, hostKeyFingerprint: bastion.hostKeyFingerprint }),
    );
    expect(pinned).toBe(bastion.name);
    const wrong = await tryConnect(
      connectOptionsFor(env, bastion, {
        knownHostsFile: empty,
        hostKeyFingerprint: env.targets[0]!.hostKeyFingerprint,
      }),
    );
    expect(wrong).toMatchObject({ code: 'E_SSH_HOST_KEY_MISMATCH' });
    expect(readFileSync(empty, 'utf8')).toBe('');
  });
});

describe('authentication', () => {
  it('fails with E_SSH_AUTH naming what was tried when no key is accepted', async () => {
    const bastion = env.bastion!;
    const result = await tryConnect(connectOptionsFor(env, bastion, { keyFiles: [env.keys.stranger] }));
    expect(result).toMatchObject({ code: 'E_SSH_AUTH' });
    expect((result as EdgeadmError).message).toContain(`key ${env.keys.stranger}`);
  });

  it('offers the keys in ssh-agent first, then key files', async () => {
    const bastion = env.bastion!;
    const socket = join(emptyHome(env), 'agent.sock');
    const agent = spawn('ssh-agent', ['-D', '-a', socket], { stdio: 'ignore' });
    try {
      for (let i = 0; i < 100 && !existsSync(socket); i++) await new Promise((resolve) => setTimeout(resolve, 20));
      execFileSync('ssh-add', ['-q', env.keys.root], { env: { SSH_AUTH_SOCK: socket }, stdio: 'ignore' });
      const viaAgent = await tryConnect(connectOptionsFor(env, bastion, { keyFiles: [], agentSocket: socket }));
      expect(viaAgent).toBe(bastion.name);
      const refused = await tryConnect(
        connectOptionsFor(env, bastion, {
          host: `nobody@${bastion.address}`,
          keyFiles: [env.keys.stranger],
          agentSocket: socket,
        }),
      );
      expect(refused).toMatchObject({ code: 'E_SSH_AUTH' });
      expect((refused as EdgeadmError).message).toContain(`(tried ssh-agent, key ${env.keys.stranger})`);
    } finally {
      agent.kill();
    }
  });

  it('goes on to key files when SSH_AUTH_SOCK points at no agent', async () => {
    const bastion = env.bastion!;
    const result = await tryConnect(connectOptionsFor(env, bastion, { agentSocket: join(env.dir, 'no-agent.sock') }));
    expect(result).toBe(bastion.name);
  });

  it('logs in with an encrypted key and its passphrase, and says when the passphrase is missing', async () => {
    const bastion = env.bastion!;
    const options = { host: `${TEST_SUDO_USER}@${bastion.address}`, keyFiles: [env.keys.encrypted] };
    const withPassphrase = await tryConnect(
      connectOptionsFor(env, bastion, { ...options, keyPassphrase: env.keys.encryptedPassphrase }),
    );
    expect(withPassphrase).toBe(bastion.name);
    expect(await tryConnect(connectOptionsFor(env, bastion, options))).toMatchObject({ code: 'E_SSH_KEY_PASSPHRASE' });
    expect(await tryConnect(connectOptionsFor(env, bastion, { ...options, keyPassphrase: 'wrong' }))).toMatchObject({
      code: 'E_SSH_KEY_PASSPHRASE',
    });
  });

  it('logs in with a password only when one is given', async () => {
    const bastion = env.bastion!;
    const options = { host: `${TEST_SUDO_USER}@${bastion.address}`, keyFiles: [env.keys.stranger] };
    expect(await tryConnect(connectOptionsFor(env, bastion, options))).toMatchObject({ code: 'E_SSH_AUTH' });
    const result = await tryConnect(connectOptionsFor(env, bastion, { ...options, password: env.userPassword }));
    expect(result).toBe(bastion.name);
    const wrong = await tryConnect(connectOptionsFor(env, bastion, { ...options, password: 'wrong-password' }));
    expect(wrong).toMatchObject({ code: 'E_SSH_AUTH' });
    expect((wrong as EdgeadmError).message).toContain('password');
    expect((wrong as EdgeadmError).message).not.toContain('wrong-password');
  });

  it('uses IdentityFile, User and HostName from an ssh config, through a ProxyJump', async () => {
    const [bastion, target] = [env.bastion!, env.targets[0]!];
    const home = emptyHome(env);
    const config = join(home, 'ssh_config');
    writeFileSync(
      config,
      [
        'Host edge-bastion',
        `  HostName ${bastion.address}`,
        '  User root',
        `  IdentityFile ${env.keys.root}`,
        'Host store-*',
        '  ProxyJump edge-bastion',
        '  User root',
        `  IdentityFile ${env.keys.root}`,
        'Host store-1',
        `  HostName ${target.address}`,
        '',
      ].join('\n'),
    );
    const result = await tryConnect({
      host: 'store-1',
      sshConfigFile: config,
      knownHostsFile: env.knownHostsFile,
      homeDir: home,
      agentSocket: '',
      connectTimeoutMs: 5_000,
    });
    expect(result).toBe(target.name);
  });
});

describe('reachability', () => {
  it('fails with E_SSH_UNREACHABLE when nothing answers at the address', async () => {
    const result = await tryConnect(
      connectOptionsFor(env, env.bastion!, { host: `root@${env.unreachableAddress}`, connectTimeoutMs: 2_000 }),
    );
    expect(result).toMatchObject({ code: 'E_SSH_UNREACHABLE' });
    expect((result as EdgeadmError).message).toContain(env.unreachableAddress);
  });

  it('fails with E_SSH_UNREACHABLE when the port is closed', async () => {
    const result = await tryConnect(
      connectOptionsFor(env, env.bastion!, { host: `root@${env.bastion!.address}:2222` }),
    );
    expect(result).toMatchObject({ code: 'E_SSH_UNREACHABLE' });
  });

  it('cannot reach the hosts behind the bastion without it', async () => {
    const target = env.targets[0]!;
    const result = await tryConnect(connectOptionsFor(env, target, { jumps: [], connectTimeoutMs: 2_000 }));
    expect(result).toMatchObject({ code: 'E_SSH_UNREACHABLE' });
  });

  it('names the bastion when the host behind it does not answer', async () => {
    const bastion = env.bastion!;
    const inner = env.targets[0]!.address.replace(/\.\d+$/, '.99');
    const result = await tryConnect(
      connectOptionsFor(env, env.targets[0]!, { host: `root@${inner}`, connectTimeoutMs: 2_000 }),
    );
    expect(result).toMatchObject({ code: 'E_SSH_UNREACHABLE' });
    expect((result as EdgeadmError).message).toContain(`through root@${bastion.address}:22`);
  });
});
