/**
 * SshHost against real OpenSSH servers in network namespaces, reached through
 * a bastion: exec, sudo, transfers (skip, resume), file queries and facts.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSharedJumps, connectHost, openSshHost } from '../../../src/hosts/connect.js';
import { HostCommandError, execOrThrow, type Host } from '../../../src/hosts/host.js';
import type { SshConnection } from '../../../src/hosts/ssh-connection.js';
import type { SshHost } from '../../../src/hosts/ssh-host.js';
import { connectOptionsFor } from '../../support/test-host-connect.js';
import { TEST_SUDO_USER, startTestHosts, type TestHosts } from '../../support/test-hosts.js';

let env: TestHosts;
let scratch: string;

beforeAll(async () => {
  env = await startTestHosts({ count: 4, bastion: true });
  scratch = mkdtempSync(join(env.dir, 'scratch-'));
});

afterAll(async () => {
  await env?.teardown();
});

async function rootHost(index = 0): Promise<SshHost> {
  return (await connectHost(connectOptionsFor(env, env.targets[index]!))) as SshHost;
}

describe('exec over SSH through a bastion', () => {
  let host: SshHost;
  beforeAll(async () => {
    host = await rootHost();
  });
  afterAll(async () => {
    await host?.close();
  });

  it('returns exit code, stdout and stderr of a failing command instead of throwing', async () => {
    const result = await host.exec('echo to-stdout; echo to-stderr >&2; exit 3');
    expect(result).toMatchObject({ exitCode: 3, stdout: 'to-stdout\n', stderr: 'to-stderr\n' });
  });

  it('execOrThrow throws a typed error that carries the result and quotes the output', async () => {
    const failure = await execOrThrow(host, 'echo "disk full" >&2; exit 12', { description: 'write the config' }).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(HostCommandError);
    const error = failure as HostCommandError;
    expect(error.code).toBe('E_HOST_COMMAND_FAILED');
    expect(error.result.exitCode).toBe(12);
    expect(error.message).toContain('write the config exited with code 12');
    expect(error.message).toContain('disk full');
    expect(error.message).toContain(host.name);
  });

  it('feeds stdin (bytes and streams) and exports env and cwd', async () => {
    expect((await host.exec('cat', { stdin: 'abc\n' })).stdout).toBe('abc\n');
    const stream = Readable.from([Buffer.from('one '), Buffer.from('two')]);
    expect((await host.exec('wc -c', { stdin: stream })).stdout.trim()).toBe('7');
    const tricky = `it's "quoted" $HOME \`x\``;
    const result = await host.exec('printf %s "$EDGE_VALUE"; pwd', { env: { EDGE_VALUE: tricky }, cwd: '/etc' });
    expect(result.stdout).toBe(`${tricky}/etc\n`);
    expect((await host.exec('true', { cwd: '/does/not/exist' })).exitCode).toBe(125);
  });

  it('stops a command at its timeout, process group and all, and says so', async () => {
    const result = await host.exec('sleep 31.5; echo never', { timeoutMs: 300 });
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).toBeNull();
    expect(result.stdout).toBe('');
    const leftover = await host.exec("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c 'sleep 31[.]5'");
    expect(leftover.stdout.trim()).toBe('0');
  });

  it('reports the signal that killed a command', async () => {
    const result = await host.exec('kill -KILL $$');
    expect(result.exitCode).toBeNull();
    expect(result.signal).toBe('KILL');
  });

  it('runs many commands at once over one connection, more than sshd allows sessions', async () => {
    const before = host.connection.connectCount;
    const results = await Promise.all(Array.from({ length: 25 }, (_, i) => host.exec(`sleep 0.1; echo ${i}`)));
    expect(results.map((r) => r.stdout.trim())).toEqual(Array.from({ length: 25 }, (_, i) => String(i)));
    expect(host.connection.connectCount).toBe(before);
  });
});

describe('sudo for a non-root user', () => {
  const userOptions = (extra: Record<string, unknown> = {}) =>
    connectOptionsFor(env, env.targets[1]!, {
      host: `${TEST_SUDO_USER}@${env.targets[1]!.address}`,
      keyFiles: [env.keys.user, env.keys.root],
      ...extra,
    });

  it('runs as root with the password fed on stdin, not to the command', async () => {
    const host = await connectHost(userOptions({ sudoPassword: env.userPassword }));
    try {
      expect((await host.exec('id -un')).stdout.trim()).toBe(TEST_SUDO_USER);
      expect((await host.exec('id -u', { sudo: true })).stdout.trim()).toBe('0');
      const echoed = await host.exec('cat', { sudo: true, stdin: 'payload' });
      expect(echoed.stdout).toBe('payload');
      expect(echoed.stdout + echoed.stderr).not.toContain(env.userPassword);
    } finally {
      await host.close();
    }
  });

  it('writes root-owned files with sudo, which the user alone cannot', async () => {
    const host = await connectHost(userOptions({ sudoPassword: env.userPassword }));
    try {
      await expect(host.put(Buffer.from('#!/bin/sh\n'), '/usr/local/bin/edge-tool')).rejects.toThrow(
        /Permission denied/,
      );
      const result = await host.put(Buffer.from('#!/bin/sh\necho hi\n'), '/usr/local/bin/edge-tool', {
        sudo: true,
        mode: 0o755,
        owner: 'root:root',
      });
      expect(result.skipped).toBe(false);
      const stat = await host.stat('/usr/local/bin/edge-tool');
      expect(stat).toMatchObject({ type: 'file', mode: 0o755, owner: 'root', group: 'root' });
      expect((await host.exec('/usr/local/bin/edge-tool')).stdout).toBe('hi\n');
    } finally {
      await host.close();
    }
  });

  it('says clearly when sudo needs a password that was not given', async () => {
    const host = await connectHost(userOptions());
    try {
      await expect(host.exec('true', { sudo: true })).rejects.toMatchObject({ code: 'E_SUDO_PASSWORD_REQUIRED' });
    } finally {
      await host.close();
    }
  });

  it('says clearly when sudo refuses the password', async () => {
    const host = await connectHost(userOptions({ sudoPassword: 'not-the-password' }));
    try {
      await expect(host.exec('true', { sudo: true })).rejects.toMatchObject({ code: 'E_SUDO_AUTH' });
    } finally {
      await host.close();
    }
  });
});

describe('file transfers', () => {
  let host: SshHost;
  beforeAll(async () => {
    host = await rootHost(2);
  });
  afterAll(async () => {
    await host?.close();
  });

  it('uploads with mode and owner, and skips an upload whose content is already there', async () => {
    const file = join(scratch, 'config.yaml');
    writeFileSync(file, 'cluster: edge\n');
    const first = await host.put(file, '/etc/edgeadm/config.yaml', { mode: 0o600, owner: 'nobody' });
    expect(first).toMatchObject({ skipped: false, bytesSent: 14, size: 14 });
    expect(await host.sha256('/etc/edgeadm/config.yaml')).toBe(sha256(readFileSync(file)));
    expect(await host.stat('/etc/edgeadm/config.yaml')).toMatchObject({ mode: 0o600, owner: 'nobody' });
    expect(await host.exists('/etc/edgeadm/config.yaml.edgeadm-part')).toBe(false);

    const second = await host.put(file, '/etc/edgeadm/config.yaml', { mode: 0o600, owner: 'nobody' });
    expect(second).toMatchObject({ skipped: true, bytesSent: 0 });

    // Same content, other mode: nothing is sent, but the mode is put right.
    const third = await host.put(file, '/etc/edgeadm/config.yaml', { mode: 0o644, owner: 'nobody' });
    expect(third).toMatchObject({ skipped: true, bytesSent: 0 });
    expect((await host.stat('/etc/edgeadm/config.yaml'))?.mode).toBe(0o644);
  });

  it('streams a Readable of unknown content and verifies it on arrival', async () => {
    const data = randomBytes(3 * 1024 * 1024 + 17);
    const result = await host.put(Readable.from([data.subarray(0, 1000), data.subarray(1000)]), '/opt/blob.bin');
    expect(result).toMatchObject({ skipped: false, size: data.length, sha256: sha256(data) });
    expect(await host.sha256('/opt/blob.bin')).toBe(sha256(data));
  });

  it('resumes an upload after the connection drops mid-way, sending only the rest', async () => {
    const data = randomBytes(48 * 1024 * 1024);
    const file = join(scratch, 'package.tar.gz');
    writeFileSync(file, data);
    const target = env.targets[2]!;
    let dropped = 0;
    const failure = await host
      .put(file, '/var/lib/edgeadm/package.tar.gz', {
        onProgress: (progress) => {
          // Progress counts bytes handed to SSH; flow control keeps them at
          // most about 4.5 MiB ahead of the host's disk (channel buffer and
          // window of 2 MiB each, a read chunk or two, the pipe to cat), so
          // by 8 MiB some have surely landed in the part file.
          if (dropped === 0 && progress.bytesTransferred >= 8 * 1024 * 1024) dropped = env.dropConnections(target);
        },
      })
      .catch((error: unknown) => error);
    expect(dropped).toBeGreaterThan(0);
    expect(failure).toMatchObject({ code: 'E_SSH_DISCONNECTED' });

    const partSize = Number((await env.run(target, 'stat -c %s /var/lib/edgeadm/package.tar.gz.edgeadm-part')).trim());
    expect(partSize).toBeGreaterThan(0);
    expect(partSize).toBeLessThan(data.length);

    const connectsBefore = host.connection.connectCount;
    const resumed = await host.put(file, '/var/lib/edgeadm/package.tar.gz');
    expect(host.connection.connectCount).toBe(connectsBefore + 1);
    expect(resumed.resumedFrom).toBe(partSize);
    expect(resumed.bytesSent).toBe(data.length - partSize);
    expect(resumed.skipped).toBe(false);
    expect(await host.sha256('/var/lib/edgeadm/package.tar.gz')).toBe(sha256(data));
    expect(await host.exists('/var/lib/edgeadm/package.tar.gz.edgeadm-part')).toBe(false);
  }, 120_000); // two 48 MiB transfers and hashes: slow on 2 busy cores

  // A `cat` on the host that writes one wrong byte into the part file, while
  // the bytes on the wire were right: only a hash of what landed in the file,
  // taken on the host, can catch it. (It lives in /usr/local/bin, which is
  // each test host's own tmpfs and comes first in sshd's PATH.)
  const CORRUPTING_CAT = [
    '#!/bin/sh',
    'case "$(readlink /proc/$$/fd/1)" in',
    '  *.edgeadm-part) head -c 1000; printf X; head -c 1 > /dev/null; exec /bin/cat ;;',
    'esac',
    'exec /bin/cat "$@"',
  ].join('\n');
  /** An openssl that is not there (a busybox host, say): the host hashes with sha256sum. */
  const MISSING_OPENSSL = '#!/bin/sh\necho "openssl: not found" >&2\nexit 127';

  async function withHostTools(tools: Record<string, string>, run: () => Promise<void>): Promise<void> {
    const target = env.targets[2]!;
    const names = Object.keys(tools);
    for (const [name, body] of Object.entries(tools)) {
      await env.run(target, `cat > /usr/local/bin/${name} <<'EOF'\n${body}\nEOF\nchmod 755 /usr/local/bin/${name}`);
    }
    try {
      await run();
    } finally {
      await env.run(target, `rm -f ${names.map((name) => `/usr/local/bin/${name}`).join(' ')}`);
    }
  }

  for (const hasOpenssl of [true, false]) {
    it(`catches a byte corrupted on the host as it was written, by the hash the host takes of the file (${hasOpenssl ? 'openssl' : 'sha256sum'})`, async () => {
      const data = Buffer.alloc(1024 * 1024);
      const path = `/opt/corrupted-${hasOpenssl ? 'openssl' : 'sha256sum'}.bin`;
      const tools: Record<string, string> = {
        cat: CORRUPTING_CAT,
        ...(hasOpenssl ? {} : { openssl: MISSING_OPENSSL }),
      };
      await withHostTools(tools, async () => {
        await expect(host.put(data, path)).rejects.toMatchObject({ code: 'E_HOST_PUT_CHECKSUM' });
      });
      expect(await host.exists(path)).toBe(false);
      expect(await host.exists(`${path}.edgeadm-part`)).toBe(false);
      // With a sound cat the same upload goes through, and a second one is skipped.
      await withHostTools(hasOpenssl ? {} : { openssl: MISSING_OPENSSL }, async () => {
        expect(await host.put(data, path)).toMatchObject({ skipped: false, sha256: sha256(data) });
        expect(await host.put(data, path)).toMatchObject({ skipped: true });
        expect(await host.sha256(path)).toBe(sha256(data));
      });
      expect(await env.run(env.targets[2]!, `sha256sum < ${path}`)).toContain(sha256(data));
    });
  }

  it('starts over when the part file left behind is not a prefix of the source', async () => {
    const data = randomBytes(256 * 1024);
    await env.run(env.targets[2]!, 'head -c 1000 /dev/urandom > /opt/other.bin.edgeadm-part');
    const result = await host.put(data, '/opt/other.bin');
    expect(result).toMatchObject({ resumedFrom: 0, bytesSent: data.length });
    expect(await host.sha256('/opt/other.bin')).toBe(sha256(data));
  });

  it('downloads a file to a local path, and answers stat, exists and sha256', async () => {
    const data = randomBytes(2 * 1024 * 1024);
    await host.put(data, '/opt/fetch-me.bin');
    const local = join(scratch, 'fetched.bin');
    const got = await host.get('/opt/fetch-me.bin', local);
    expect(got).toMatchObject({ path: local, size: data.length, sha256: sha256(data) });
    expect(readFileSync(local).equals(data)).toBe(true);
    await expect(host.get('/opt/missing.bin', join(scratch, 'missing.bin'))).rejects.toBeInstanceOf(HostCommandError);

    expect(await host.exists('/opt')).toBe(true);
    expect(await host.exists('/opt/nothing-here')).toBe(false);
    expect(await host.stat('/opt/nothing-here')).toBeUndefined();
    expect(await host.sha256('/opt/nothing-here')).toBeUndefined();
    expect((await host.stat('/opt'))?.type).toBe('directory');
  });
});

describe('a connection through a bastion that drops', () => {
  it('fails the running command as disconnected instead of waiting for ever', async () => {
    // The bastion forwards the target's end of the TCP connection as the end
    // of one channel, which stays half-open: the client has to end it itself.
    const target = env.targets[1]!;
    const host = await rootHost(1);
    try {
      await host.exec('true');
      const running = host.exec('sleep 300').catch((error: unknown) => error);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(env.dropConnections(target)).toBeGreaterThan(0);
      expect(await running).toMatchObject({ code: 'E_SSH_DISCONNECTED' });
      // The next command reconnects.
      expect((await host.exec('echo back')).stdout).toBe('back\n');
    } finally {
      await host.close();
    }
  }, 60_000);
});

describe('facts', () => {
  it('describes each test host: its own hostname, address, and which ports are free', async () => {
    const hosts: Host[] = [];
    try {
      for (const target of env.hosts) hosts.push(await connectHost(connectOptionsFor(env, target)));
      const facts = await Promise.all(hosts.map((host) => host.facts({ ports: [22, 6443] })));
      facts.forEach((fact, index) => {
        const target = env.hosts[index]!;
        expect(fact.hostname).toBe(target.name);
        expect(fact.addresses.map((a) => a.address)).toContain(target.address);
        expect(fact.ports).toEqual([
          { port: 22, isFree: false },
          { port: 6443, isFree: true },
        ]);
        expect(fact.os.id).toBe('debian');
        expect(fact.cpus).toBeGreaterThan(0);
        expect(fact.memory.totalBytes).toBeGreaterThan(0);
        expect(['amd64', 'arm64']).toContain(fact.arch);
        expect(fact.disks.map((d) => d.path)).toContain('/var/lib');
      });
      // The bastion has two interfaces: one on each side.
      expect(facts[0]!.addresses.map((a) => a.address)).toContain(env.bastion!.innerAddress);
    } finally {
      await Promise.all(hosts.map((host) => host.close()));
    }
  });

  it('sees a port in use once something listens on it', async () => {
    const host = await rootHost(0);
    try {
      // The test hosts share this machine's files, so the Node running the tests is there too.
      // The listener marks when it listens, so that a slow start under load is waited for, not raced.
      const ready = '/var/lib/edgeadm/port-10250-ready';
      const listener = await host.exec(
        `rm -f ${ready}; nohup ${process.execPath} -e "require('node:net').createServer().listen(10250, () => require('node:fs').writeFileSync('${ready}', '')); setTimeout(() => {}, 60000)" >/dev/null 2>&1 & echo $!`,
      );
      const pid = listener.stdout.trim();
      const waited = await host.exec(`for i in $(seq 1 600); do [ -e ${ready} ] && exit 0; sleep 0.1; done; exit 1`);
      expect(waited.exitCode).toBe(0);
      const isFree = (await host.facts({ ports: [10250] })).ports[0]!.isFree;
      await host.exec(`kill ${pid}`);
      expect(isFree).toBe(false);
    } finally {
      await host.close();
    }
  });
});

describe('connections', () => {
  it('is lazy until the first command, and reconnects after close', async () => {
    const host = await openSshHost(connectOptionsFor(env, env.targets[0]!));
    try {
      expect(host.connection.connectCount).toBe(0);
      expect((await host.exec('hostname')).stdout.trim()).toBe(env.targets[0]!.name);
      await host.close();
      expect((await host.exec('hostname')).exitCode).toBe(0);
      expect(host.connection.connectCount).toBe(2);
    } finally {
      await host.close();
    }
  });
});

describe('shared bastion', () => {
  it('serves many hosts over one connection to the bastion', async () => {
    const sharedJumps = new Map<string, SshConnection>();
    const hosts = await Promise.all(
      env.targets.map((target) => connectHost(connectOptionsFor(env, target, { sharedJumps }))),
    );
    try {
      const names = await Promise.all(hosts.map(async (host) => (await host.exec('hostname')).stdout.trim()));
      expect(names).toEqual(env.targets.map((target) => target.name));
      expect(sharedJumps.size).toBe(1);
      const bastion = [...sharedJumps.values()][0]!;
      for (const host of hosts) expect((host as SshHost).connection.via).toBe(bastion);
      expect(bastion.connectCount).toBe(1);
    } finally {
      await Promise.all(hosts.map((host) => host.close()));
      await closeSharedJumps(sharedJumps);
    }
  });
});

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}
