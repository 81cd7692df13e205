/**
 * Two host key rules that OpenSSH's own client would relax, against a real
 * sshd, with that client as the differential witness:
 *
 * - known_hosts `@cert-authority` lines are not honoured (ssh2 cannot ask
 *   for a host certificate): a host known only through its CA is refused as
 *   unknown (`E_SSH_HOST_KEY_UNKNOWN`), where `ssh` accepts it.
 * - `StrictHostKeyChecking` (and `UserKnownHostsFile`) in `~/.ssh/config`
 *   are ignored: with `StrictHostKeyChecking no` an unknown host is still
 *   refused, where `ssh` connects.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHost, type HostConnectOptions } from '../../../src/hosts/connect.js';
import { connectOptionsFor, emptyHome } from '../../support/test-host-connect.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';

const run = promisify(execFile);
/** How long sshd may take to listen again after SIGHUP (it re-executes itself). */
const SSHD_RELOAD_WAIT_MS = 10_000;

let env: TestHosts;
let host: TestHost;
/** A known_hosts file holding only `@cert-authority * <CA key>`. */
let caOnlyKnownHosts: string;

/** Connects with edgeadm's SSH code and runs `hostname`; returns it, or the error's code. */
async function edgeadmConnect(options: HostConnectOptions & { host: string }): Promise<string> {
  try {
    const connected = await connectHost(options);
    try {
      return (await connected.exec('hostname')).stdout.trim();
    } finally {
      await connected.close();
    }
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

/** OpenSSH's client, with only the options given (no user or system config); the hostname, or its stderr. */
async function opensshConnect(args: string[]): Promise<string> {
  try {
    const { stdout } = await run(
      'ssh',
      [
        '-o',
        'BatchMode=yes',
        '-o',
        'GlobalKnownHostsFile=/dev/null',
        '-o',
        'ConnectTimeout=5',
        '-i',
        env.keys.root,
        ...args,
        `root@${host.address}`,
        'hostname',
      ],
      { timeout: 20_000 },
    );
    return stdout.trim();
  } catch (error) {
    return `failed: ${(error as { stderr?: string }).stderr ?? String(error)}`;
  }
}

beforeAll(async () => {
  env = await startTestHosts({ count: 1 });
  host = env.targets[0]!;
  // A host CA, and the host's own key certified by it for the address the tests use.
  const ca = join(env.dir, 'host-ca');
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'edgeadm-test-host-ca', '-f', ca]);
  const hostKey = join(env.dir, 'host-key.pub');
  writeFileSync(hostKey, `${host.hostPublicKey}\n`);
  await run('ssh-keygen', [
    '-q',
    '-s',
    ca,
    '-I',
    'edgeadm-test-host',
    '-h',
    '-n',
    host.address,
    '-V',
    '-5m:+1h',
    hostKey,
  ]);
  const certificate = readFileSync(join(env.dir, 'host-key-cert.pub'), 'utf8').trim();
  await env.run(
    host,
    [
      `printf '%s\\n' '${certificate}' > /etc/ssh/edgeadm-test/ssh_host_ed25519_key-cert.pub`,
      `echo 'HostCertificate /etc/ssh/edgeadm-test/ssh_host_ed25519_key-cert.pub' >> /etc/ssh/edgeadm-test/sshd_config`,
      // sshd re-executes itself on SIGHUP, reading its configuration again.
      `kill -HUP ${host.sshdPid}`,
    ].join('\n'),
  );
  caOnlyKnownHosts = join(env.dir, 'known_hosts.ca-only');
  writeFileSync(caOnlyKnownHosts, `@cert-authority * ${readFileSync(`${ca}.pub`, 'utf8').trim()}\n`);
  // Wait for OpenSSH to accept the host through the CA: sshd is back and presents the certificate.
  const deadline = Date.now() + SSHD_RELOAD_WAIT_MS;
  let answer = '';
  while (Date.now() < deadline) {
    answer = await opensshConnect(['-o', 'StrictHostKeyChecking=yes', '-o', `UserKnownHostsFile=${caOnlyKnownHosts}`]);
    if (answer === host.name) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`OpenSSH did not accept the host through its CA: ${answer}\n${env.sshdLog(host)}`);
}, 120_000);

afterAll(async () => {
  await env?.teardown();
});

describe('host key rules stricter than OpenSSH', { timeout: 60_000 }, () => {
  it('refuses a host known only through a known_hosts @cert-authority line, which ssh accepts', async () => {
    expect(
      await opensshConnect(['-o', 'StrictHostKeyChecking=yes', '-o', `UserKnownHostsFile=${caOnlyKnownHosts}`]),
    ).toBe(host.name);
    expect(await edgeadmConnect(connectOptionsFor(env, host, { knownHostsFile: caOnlyKnownHosts }))).toBe(
      'E_SSH_HOST_KEY_UNKNOWN',
    );
  });

  it('ignores StrictHostKeyChecking no in ~/.ssh/config: an unknown host is still refused, where ssh connects', async () => {
    const home = emptyHome(env);
    mkdirSync(join(home, '.ssh'), { mode: 0o700 });
    const config = join(home, '.ssh', 'config');
    writeFileSync(config, 'Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n');
    const empty = join(home, 'known_hosts');
    writeFileSync(empty, '');
    expect(await opensshConnect(['-F', config])).toBe(host.name);
    expect(await edgeadmConnect(connectOptionsFor(env, host, { homeDir: home, knownHostsFile: empty }))).toBe(
      'E_SSH_HOST_KEY_UNKNOWN',
    );
    // The same home with the host's key on record: the config itself was read and is fine.
    writeFileSync(empty, `${host.address} ${host.hostPublicKey}\n`);
    expect(await edgeadmConnect(connectOptionsFor(env, host, { homeDir: home, knownHostsFile: empty }))).toBe(
      host.name,
    );
  });
});
