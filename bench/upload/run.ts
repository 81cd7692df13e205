/**
 * Upload benchmark: one 200 MiB package-sized file to 10 test hosts in
 * parallel, with edgeadm's SSH `put` against OpenSSH's `scp` of the same file
 * to the same hosts, interleaved round by round in one run.
 *
 *   npm run bench:upload                 (as root: it starts netns+sshd test hosts)
 *   npm run bench:upload -- --rounds 3 --mib 200 --hosts 10
 *
 * The test hosts are real sshd processes in network namespaces on this
 * machine, so both tools share its cores with ten sshd processes: the figures
 * compare the two clients, not a network.
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { connectHost } from '../../src/hosts/connect.js';
import { sha256OfFile } from '../../src/hosts/file-transfer.js';
import type { Host } from '../../src/hosts/host.js';
import { connectOptionsFor } from '../../test/support/test-host-connect.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../test/support/test-hosts.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    mib: { type: 'string', default: '200' },
    hosts: { type: 'string', default: '10' },
  },
});
const rounds = Number(values.rounds);
const mib = Number(values.mib);
const hostCount = Number(values.hosts);
const REMOTE_EDGEADM = '/opt/pkg-edgeadm.tar.gz';
const REMOTE_SCP = '/opt/pkg-scp.tar.gz';

async function writeRandomFile(path: string, bytes: number): Promise<void> {
  const out = createWriteStream(path);
  const chunk = 1 << 20;
  for (let written = 0; written < bytes; written += chunk) {
    if (!out.write(randomBytes(Math.min(chunk, bytes - written))))
      await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
}

function scp(env: TestHosts, host: TestHost, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'scp',
      [
        '-q',
        '-i',
        env.keys.root,
        '-o',
        `UserKnownHostsFile=${env.knownHostsFile}`,
        '-o',
        'StrictHostKeyChecking=yes',
        '-o',
        'BatchMode=yes',
        '-F',
        '/dev/null',
        file,
        `root@${host.address}:${REMOTE_SCP}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`scp to ${host.address}: ${code} ${stderr}`)),
    );
  });
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return (performance.now() - start) / 1000;
}

const env = await startTestHosts({ count: hostCount });
try {
  const file = join(env.dir, 'pkg.tar.gz');
  await writeRandomFile(file, mib * 2 ** 20);
  const sha256 = await sha256OfFile(file);
  const hosts: Host[] = await Promise.all(env.hosts.map((h) => connectHost(connectOptionsFor(env, h))));
  const clean = (): Promise<unknown> =>
    Promise.all(hosts.map((h) => h.exec(`rm -f ${REMOTE_EDGEADM} ${REMOTE_EDGEADM}.edgeadm-part ${REMOTE_SCP}`)));

  const results: Record<string, number[]> = { 'edgeadm put': [], scp: [], 'edgeadm put (unchanged, skipped)': [] };
  for (let round = 0; round < rounds; round++) {
    await clean();
    const cpuBefore = process.cpuUsage();
    results['edgeadm put']!.push(
      await timed(() => Promise.all(hosts.map((h) => h.put(file, REMOTE_EDGEADM, { sha256 })))),
    );
    const cpu = process.cpuUsage(cpuBefore);
    console.error(
      `round ${round + 1}: edgeadm put ${results['edgeadm put']!.at(-1)!.toFixed(2)} s, ${((cpu.user + cpu.system) / 1e6).toFixed(1)} CPU s of this process, load ${loadavg()[0]!.toFixed(1)}`,
    );
    results['edgeadm put (unchanged, skipped)']!.push(
      await timed(() => Promise.all(hosts.map((h) => h.put(file, REMOTE_EDGEADM, { sha256 })))),
    );
    await clean();
    results.scp!.push(await timed(() => Promise.all(env.hosts.map((h) => scp(env, h, file)))));
  }
  // Every copy arrived whole.
  for (const h of hosts) {
    if ((await h.sha256(REMOTE_SCP)) !== sha256) throw new Error('scp copy differs');
  }
  await clean();
  await Promise.all(hosts.map((h) => h.close()));

  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const total = (mib * hostCount) / 1;
  const scpMedian = median(results.scp!);
  console.log(`${hostCount} hosts × ${mib} MiB in parallel, ${rounds} interleaved rounds, node ${process.version}`);
  console.log('| client | median s | min s | max s | aggregate MiB/s | × scp time |\n|---|---|---|---|---|---|');
  for (const [name, xs] of Object.entries(results)) {
    const m = median(xs);
    console.log(
      `| ${name} | ${m.toFixed(2)} | ${Math.min(...xs).toFixed(2)} | ${Math.max(...xs).toFixed(2)} | ${(total / m).toFixed(0)} | ${(m / scpMedian).toFixed(2)} |`,
    );
  }
  await rm(file, { force: true });
} finally {
  await env.teardown();
}
