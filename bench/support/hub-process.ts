/**
 * `edgeadm hub serve` as its own process for benchmarks (bin/run.js, the
 * built CLI), and what benchmarks read of it: its CPU time and RSS from
 * /proc, and its HTTP API with the admin token. bench/rollout uses it;
 * bench/tunnel/scale.ts and bench/tunnel/replicas.ts use it too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** A running hub process. */
export interface HubProcess {
  pid: number;
  /** Resolves with the listening URL. */
  listening: Promise<string>;
  exited: Promise<void>;
  child: ChildProcess;
}

/**
 * Starts the hub with `ulimit -n` raised to the hard limit; `nodeOptions` is
 * its NODE_OPTIONS (e.g. --cpu-prof), `args` more `hub serve` flags (e.g.
 * `--store etcd …` for a replica).
 */
export function startHubProcess(options: {
  root: string;
  port: number;
  dataDir: string;
  home: string;
  nodeOptions?: string;
  args?: string[];
  timeoutMs: number;
}): HubProcess {
  const child = spawn(
    'bash',
    [
      '-c',
      'ulimit -n hard && exec "$0" "$@"',
      process.execPath,
      join(options.root, 'bin/run.js'),
      'hub',
      'serve',
      '--listen',
      `127.0.0.1:${options.port}`,
      '--data-dir',
      options.dataDir,
      ...(options.args ?? []),
    ],
    {
      env: {
        ...process.env,
        EDGEADM_HOME: options.home,
        NO_COLOR: '1',
        ...(options.nodeOptions === undefined ? {} : { NODE_OPTIONS: options.nodeOptions }),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  // Keep reading (a full pipe would stall the hub), keep only a tail for errors.
  let tail = '';
  const keep = (chunk: Buffer): void => void (tail = (tail + chunk.toString()).slice(-8192));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  process.once('exit', () => child.kill('SIGKILL'));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const listening = (async () => {
    for (let i = 0; i < options.timeoutMs / 100; i += 1) {
      const url = /hub listening on (\S+)/.exec(tail)?.[1];
      if (url) return url;
      if (child.exitCode !== null) throw new Error(`the hub exited: ${tail}`);
      await sleep(100);
    }
    throw new Error(`the hub did not start: ${tail}`);
  })();
  return { pid: child.pid ?? 0, listening, exited, child };
}

/** CPU time (user + system) a process has used so far, in seconds (Linux /proc; clock ticks of 10 ms). */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Resident and peak resident memory of a process, in MiB. */
export function rssMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/** The machine's load averages (1, 5, 15 min), as /proc/loadavg says them. */
export function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

/**
 * One call to the hub's API; rejects on a status of 300 or more. Without a
 * token no Authorization header is sent: `/metrics` then answers with the
 * hub's own metrics alone, not the fleet's series it renders per cluster for
 * a user (what a poll of `edgeadm_hub_connected_agents` should cost).
 */
export function callHub(
  url: string,
  options: { method?: string; body?: unknown; token?: string; ca: string; pool?: https.Agent; timeoutMs?: number },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = https.request(
      url,
      {
        method: options.method ?? 'GET',
        ca: options.ca,
        agent: options.pool ?? false,
        timeout: options.timeoutMs ?? 10_000,
        headers: {
          ...(options.token === undefined ? {} : { Authorization: `Bearer ${options.token}` }),
          ...(payload ? { 'Content-Type': 'application/json' } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if ((res.statusCode ?? 0) >= 300) reject(new Error(`${url}: HTTP ${res.statusCode}: ${text}`));
          else resolve(text);
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${url}: timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}
