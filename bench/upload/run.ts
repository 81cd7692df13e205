/**
 * Upload benchmark: one 200 MiB package-sized file to 10 test hosts in
 * parallel, with edgeadm's SSH `put` against OpenSSH's `scp` of the same file
 * to the same hosts, interleaved round by round in one run.
 *
 *   npm run bench:upload                 (as root: it starts netns+sshd test hosts)
 *   npm run bench:upload -- --rounds 3 --mib 200 --hosts 10
 *   npm run bench:upload -- --baseline main      (or a built checkout's directory)
 *   npm run bench:upload -- --in-process-too     (also this build with worker processes off)
 *
 * `--baseline GIT-REF|DIR` adds the `Host.put` of another build (its
 * `lib/hosts/connect.js`, see bench/support/baseline.js) to every round, so a
 * before and after are timed in the same rounds as `scp`.
 *
 * CPU, per client and round: "client CPU s" is this process's CPU (all its
 * threads) plus that of the children it reaped (the `scp` and `ssh`
 * processes); "hosts CPU s" is that of every process in the test hosts'
 * network namespaces (sshd, its sessions, and the commands they ran, reaped
 * ones included), read from /proc. On a shared machine the wall times are
 * indicative; the CPU is what each client costs.
 *
 * The test hosts are real sshd processes in network namespaces on this
 * machine, so both tools share its cores with ten sshd processes: the figures
 * compare the two clients, not a network.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { connectHost } from '../../src/hosts/connect.js';
import { prepareBaseline } from '../support/baseline.js';
import { sha256OfFile } from '../../src/hosts/file-transfer.js';
import type { Host } from '../../src/hosts/host.js';
import { connectOptionsFor } from '../../test/support/test-host-connect.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../test/support/test-hosts.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    mib: { type: 'string', default: '200' },
    hosts: { type: 'string', default: '10' },
    baseline: { type: 'string' },
    'in-process-too': { type: 'boolean', default: false },
  },
});
const rounds = Number(values.rounds);
const mib = Number(values.mib);
const hostCount = Number(values.hosts);
const REMOTE_EDGEADM = '/opt/pkg-edgeadm.tar.gz';
const REMOTE_SCP = '/opt/pkg-scp.tar.gz';
const baseline = values.baseline === undefined ? undefined : prepareBaseline(values.baseline);
const connectBaseline =
  baseline === undefined
    ? undefined
    : ((await import(join(baseline.dir, 'lib', 'hosts', 'connect.js'))) as { connectHost: typeof connectHost })
        .connectHost;

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

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ, 100 on Linux). */
const CLOCK_TICKS = 100;

/** utime, stime, cutime and cstime of a process from /proc/<pid>/stat, in seconds. */
function procTimes(pid: number | 'self'): { own: number; children: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces), from field 3 on.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const at = (field: number): number => Number(fields[field - 3]);
    return { own: (at(14) + at(15)) / CLOCK_TICKS, children: (at(16) + at(17)) / CLOCK_TICKS };
  } catch {
    return { own: 0, children: 0 }; // exited meanwhile
  }
}

/** CPU seconds of everything that ran in the test hosts' namespaces (live processes and what they reaped). */
function hostsCpuSeconds(hosts: readonly TestHost[]): number {
  let total = 0;
  for (const host of hosts) {
    const pids = execFileSync('ip', ['netns', 'pids', host.netns], { encoding: 'utf8' }).split('\n').filter(Boolean);
    for (const pid of pids) {
      const times = procTimes(Number(pid));
      total += times.own + times.children;
    }
  }
  return total;
}

/** This process's CPU seconds (all threads) and those of its reaped children. */
function clientCpuSeconds(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6 + procTimes('self').children;
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
  // The same build with every upload in this process (no worker processes).
  const inProcessHosts: Host[] | undefined = values['in-process-too']
    ? await Promise.all(
        env.hosts.map((h) => connectHost(connectOptionsFor(env, h, { uploadWorkers: { minBytes: Infinity } }))),
      )
    : undefined;
  const baseHosts: Host[] | undefined =
    connectBaseline === undefined
      ? undefined
      : await Promise.all(env.hosts.map((h) => connectBaseline(connectOptionsFor(env, h))));
  const clean = (): Promise<unknown> =>
    Promise.all(hosts.map((h) => h.exec(`rm -f ${REMOTE_EDGEADM} ${REMOTE_EDGEADM}.edgeadm-part ${REMOTE_SCP}`)));

  interface Measured {
    seconds: number[];
    clientCpu: number[];
    hostsCpu: number[];
  }
  const results = new Map<string, Measured>();
  /** Times one parallel upload to every host, with the CPU of the client and of the hosts. */
  const measure = async (name: string, upload: () => Promise<unknown>): Promise<void> => {
    const clientBefore = clientCpuSeconds();
    const hostsBefore = hostsCpuSeconds(env.hosts);
    const seconds = await timed(upload);
    const clientCpu = clientCpuSeconds() - clientBefore;
    const hostsCpu = hostsCpuSeconds(env.hosts) - hostsBefore;
    const entry = results.get(name) ?? { seconds: [], clientCpu: [], hostsCpu: [] };
    entry.seconds.push(seconds);
    entry.clientCpu.push(clientCpu);
    entry.hostsCpu.push(hostsCpu);
    results.set(name, entry);
    console.error(
      `  ${name}: ${seconds.toFixed(2)} s, CPU s: client ${clientCpu.toFixed(1)}, hosts ${hostsCpu.toFixed(1)}; load ${loadavg()[0]!.toFixed(1)}`,
    );
  };
  const putAll = (clients: Host[]) => (): Promise<unknown> =>
    Promise.all(clients.map((h) => h.put(file, REMOTE_EDGEADM, { sha256 })));
  const baseName = `edgeadm put, baseline ${baseline?.label ?? ''}`;
  for (let round = 0; round < rounds; round++) {
    console.error(`round ${round + 1}:`);
    await clean();
    await measure('edgeadm put', putAll(hosts));
    await measure('edgeadm put (unchanged, skipped)', putAll(hosts));
    if (inProcessHosts !== undefined) {
      await clean();
      await measure('edgeadm put, workers off', putAll(inProcessHosts));
    }
    if (baseHosts !== undefined) {
      await clean();
      await measure(baseName, putAll(baseHosts));
      await measure(`${baseName} (unchanged, skipped)`, putAll(baseHosts));
    }
    await clean();
    await measure('scp', () => Promise.all(env.hosts.map((h) => scp(env, h, file))));
  }
  // Every copy arrived whole.
  for (const h of hosts) {
    if ((await h.sha256(REMOTE_SCP)) !== sha256) throw new Error('scp copy differs');
  }
  await clean();
  await Promise.all([...hosts, ...(inProcessHosts ?? []), ...(baseHosts ?? [])].map((h) => h.close()));

  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const total = mib * hostCount;
  const scpMedian = median(results.get('scp')!.seconds);
  console.log(
    `${hostCount} hosts × ${mib} MiB in parallel, ${rounds} interleaved rounds, node ${process.version}, load at the end ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  console.log(
    '| client | median s | min s | max s | aggregate MiB/s | × scp time | client CPU s | hosts CPU s |\n|---|---|---|---|---|---|---|---|',
  );
  for (const [name, { seconds, clientCpu, hostsCpu }] of results) {
    const m = median(seconds);
    console.log(
      `| ${name} | ${m.toFixed(2)} | ${Math.min(...seconds).toFixed(2)} | ${Math.max(...seconds).toFixed(2)} | ${(total / m).toFixed(0)} | ${(m / scpMedian).toFixed(2)} | ${median(clientCpu).toFixed(1)} | ${median(hostsCpu).toFixed(1)} |`,
    );
  }
  await rm(file, { force: true });
} finally {
  await env.teardown();
}
