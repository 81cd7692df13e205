/**
 * The test host harness itself: each host is its own machine as far as
 * edgeadm can tell (hostname, address, private install directories), this
 * machine is left untouched, and teardown (also after a crash) leaves nothing.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../support/cli.js';
import { TEST_HOSTS_PREFIX, TMPFS_DIRS, startTestHosts, sweepStaleTestHosts } from '../../support/test-hosts.js';

function netnsNames(): string[] {
  return execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.split(' ')[0] ?? '')
    .filter(Boolean);
}

function isAlive(pid: number): boolean {
  try {
    // A zombie is dead for our purposes.
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('test hosts', () => {
  it('gives each host its own hostname, address and empty install directories, apart from this machine', async () => {
    const env = await startTestHosts({ count: 2 });
    try {
      const [a, b] = env.hosts as [(typeof env.hosts)[0], (typeof env.hosts)[0]];
      expect((await env.run(a, 'hostname')).trim()).toBe(a.name);
      expect((await env.run(b, 'hostname')).trim()).toBe(b.name);
      expect(await env.run(a, 'ip -o -4 addr show eth0')).toContain(`${a.address}/24`);
      for (const dir of TMPFS_DIRS) {
        expect((await env.run(a, `findmnt -n -o FSTYPE ${dir}`)).trim()).toBe('tmpfs');
        expect((await env.run(a, `ls -A ${dir} | wc -l`)).trim()).toBe('0');
      }
      await env.run(a, 'echo a > /etc/edgeadm/marker && echo a > /etc/hosts.edgeadm-test');
      expect((await env.run(b, 'ls -A /etc/edgeadm | wc -l')).trim()).toBe('0');
      expect(existsSync('/etc/edgeadm/marker')).toBe(false);
      expect(existsSync('/etc/hosts.edgeadm-test')).toBe(false);
      // The sudo user exists on the hosts only.
      expect(await env.run(a, 'id -un edgeadm-test')).toContain('edgeadm-test');
      expect(readFileSync('/etc/passwd', 'utf8')).not.toContain('edgeadm-test:');
    } finally {
      await env.teardown();
    }
  });

  it('tears down every namespace, link, process and file', async () => {
    const env = await startTestHosts({ count: 3, bastion: true });
    const names = env.hosts.map((host) => host.netns);
    const pids = env.hosts.map((host) => host.sshdPid);
    expect(netnsNames()).toEqual(expect.arrayContaining(names));
    await env.teardown();
    expect(netnsNames().filter((name) => names.includes(name) || name === `${names[0]!.split('-')[0]}-sw`)).toEqual([]);
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
    expect(existsSync(env.dir)).toBe(false);
    const rootLink = names[0]!.split('-')[0]!;
    expect(execFileSync('ip', ['-o', 'link'], { encoding: 'utf8' })).not.toContain(`${rootLink}@`);
    await env.teardown(); // twice is harmless
  });

  it('sweeps what a crashed run left behind', async () => {
    // A child process starts hosts and dies without tearing down.
    const script = [
      `import { startTestHosts } from ${JSON.stringify(join(REPO_ROOT, 'test/support/test-hosts.ts'))};`,
      'const env = await startTestHosts({ count: 1 });',
      "process.stdout.write(JSON.stringify({ netns: env.hosts[0].netns, pid: env.hosts[0].sshdPid, dir: env.dir }) + '\\n');",
      "process.kill(process.pid, 'SIGKILL');",
    ].join('\n');
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await new Promise((resolve) => child.once('exit', resolve));
    const left = JSON.parse(output) as { netns: string; pid: number; dir: string };
    expect(left.netns.startsWith(TEST_HOSTS_PREFIX)).toBe(true);
    expect(netnsNames()).toContain(left.netns);
    expect(isAlive(left.pid)).toBe(true);

    sweepStaleTestHosts();
    expect(netnsNames()).not.toContain(left.netns);
    expect(existsSync(left.dir)).toBe(false);
    for (let i = 0; i < 50 && isAlive(left.pid); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(isAlive(left.pid)).toBe(false);
  });
});
