/**
 * What the node tunnel benchmark measures on one path: `kubectl cp` of a
 * file to the edge pod (wall time, the content checked by sha256 in the
 * pod), many small `kubectl exec … -- true` (each a new kubectl, a new
 * connection through the path), and echo round trips on one interactive
 * `kubectl exec -i … -- cat`. With each, the CPU the path's processes spent
 * on both ends, and the API server's, from /proc/<pid>/stat.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ActivePath, BenchCluster } from './paths.js';
import { pidsOf } from './paths.js';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** CPU seconds (user + system) of `pids`, as /proc reads now; a process gone counts 0. */
export function cpuSecondsOf(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // After the comm: state is field 3, utime 14 and stime 15 (proc(5)), so indexes 11 and 12 here.
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // exited
    }
  }
  return ticks / TICKS_PER_SECOND;
}

/** CPU seconds spent during one measurement. */
export interface CpuSpent {
  /** The path's process on the control plane (0 for direct). */
  server: number;
  /** The path's process on the edge node (0 for direct). */
  agent: number;
  apiServer: number;
}

/** Reads CPU before and after `work`. */
async function withCpu<T>(
  bench: BenchCluster,
  path: ActivePath,
  work: () => Promise<T>,
): Promise<{ value: T; cpu: CpuSpent }> {
  const pids = {
    server: (await path.processes?.server()) ?? [],
    agent: (await path.processes?.agent()) ?? [],
    apiServer: await pidsOf(bench, bench.cluster.controlPlane, 'kube-apiserver'),
  };
  const before = {
    server: cpuSecondsOf(pids.server),
    agent: cpuSecondsOf(pids.agent),
    apiServer: cpuSecondsOf(pids.apiServer),
  };
  const value = await work();
  return {
    value,
    cpu: {
      server: cpuSecondsOf(pids.server) - before.server,
      agent: cpuSecondsOf(pids.agent) - before.agent,
      apiServer: cpuSecondsOf(pids.apiServer) - before.apiServer,
    },
  };
}

/** One copy. */
export interface CopyRun {
  seconds: number;
  mibPerSecond: number;
  cpu: CpuSpent;
}

/** `kubectl cp` of `file` (`mib` MiB, `sha256`) to the edge pod; throws when the pod's copy differs. */
export async function copyOnce(
  bench: BenchCluster,
  path: ActivePath,
  file: { path: string; mib: number; sha256: string },
): Promise<CopyRun> {
  const target = '/tmp/payload';
  const { value: seconds, cpu } = await withCpu(bench, path, async () => {
    const started = performance.now();
    const copied = await bench.kubectl(['cp', file.path, `${bench.pod}:${target}`]);
    if (copied.exitCode !== 0) throw new Error(`kubectl cp on ${path.name} failed: ${copied.stderr}`);
    return (performance.now() - started) / 1000;
  });
  const summed = await bench.kubectl(['exec', bench.pod, '--', 'sha256sum', target]);
  const inPod = summed.stdout.split(/\s+/)[0];
  await bench.kubectl(['exec', bench.pod, '--', 'rm', '-f', target]);
  if (inPod !== file.sha256)
    throw new Error(`the copy on ${path.name} differs: sha256 ${inPod} in the pod, ${file.sha256} sent`);
  return { seconds, mibPerSecond: file.mib / seconds, cpu };
}

/** Latencies of a batch, with the CPU spent over all of it. */
export interface LatencyRun {
  count: number;
  /** Milliseconds, sorted. */
  ms: number[];
  cpu: CpuSpent;
}

/** `count` × `kubectl exec <pod> -- true`, one after another. */
export async function smallExecs(bench: BenchCluster, path: ActivePath, count: number): Promise<LatencyRun> {
  const { value: ms, cpu } = await withCpu(bench, path, async () => {
    const times: number[] = [];
    for (let i = 0; i < count; i += 1) {
      const started = performance.now();
      const run = await bench.kubectl(['exec', bench.pod, '--', 'true']);
      if (run.exitCode !== 0) throw new Error(`kubectl exec on ${path.name} failed: ${run.stderr}`);
      times.push(performance.now() - started);
    }
    return times;
  });
  return { count, ms: ms.sort((a, b) => a - b), cpu };
}

/**
 * One `kubectl exec -i <pod> -- cat`, and `count` lines written one at a
 * time, each timed from its write until cat's echo of it is read back
 * (after `warmup` untimed ones).
 */
export async function echoRoundTrips(
  bench: BenchCluster,
  path: ActivePath,
  options: { kubectl: string; kubeconfig: string; count: number; warmup: number },
): Promise<LatencyRun> {
  const child = spawn(options.kubectl, ['--kubeconfig', options.kubeconfig, 'exec', '-i', bench.pod, '--', 'cat'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let received = '';
  let wake: (() => void) | undefined;
  child.stdout.on('data', (chunk: Buffer) => {
    received += chunk.toString('utf8');
    wake?.();
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const roundTrip = async (line: string): Promise<number> => {
    const started = performance.now();
    child.stdin.write(`${line}\n`);
    const deadline = Date.now() + 30_000;
    while (!received.endsWith(`${line}\n`)) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`no echo of ${line} on ${path.name}: ${stderr}`);
      await Promise.race([new Promise<void>((resolve) => (wake = resolve)), sleep(1_000)]);
    }
    return performance.now() - started;
  };
  try {
    for (let i = 0; i < options.warmup; i += 1) await roundTrip(`warmup-${i}`);
    const { value: ms, cpu } = await withCpu(bench, path, async () => {
      const times: number[] = [];
      for (let i = 0; i < options.count; i += 1) times.push(await roundTrip(`line-${i}`));
      return times;
    });
    return { count: options.count, ms: ms.sort((a, b) => a - b), cpu };
  } finally {
    child.stdin.end();
    await Promise.race([exited, sleep(5_000)]);
    child.kill();
  }
}

/** The p-th percentile (nearest rank) of sorted values. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
