/**
 * The SIMULATED kubelet's (not the kubelet's) run of the stacked etcd static
 * Pod /etc/kubernetes/manifests/etcd.yaml (written by the simulated kubeadm
 * on an HA control plane, stacked-etcd.ts): the manifest's command run with
 * the REAL etcd binary (Debian's /usr/bin/etcd) instead of the image's, as
 * the kubelet runs the container. A manifest whose content changes is run
 * again; a manifest moved away stops etcd (edgeadm's upgrade backup moves
 * the static Pod manifests aside before it archives /var/lib/etcd), and one
 * put back starts it again on its data.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, open, readFile, rm, writeFile } from 'node:fs/promises';
import { load as loadYaml } from 'js-yaml';
import { sleep } from '../sim-node.js';
import { ETCD_MANIFEST, KUBELET_DIR } from './layout.js';

/** The etcd binary (Debian's etcd-server package) that stands in for the image's. */
const ETCD_BINARY = '/usr/bin/etcd';
/** Where the kubelet notes the etcd it runs (a kubelet killed leaves it running; the next one stops it). */
const PID_FILE = `${KUBELET_DIR}/sim-etcd.pid`;
/** The container's log (outside /var/lib/etcd, which edgeadm's backup archives). */
const LOG_DIR = '/var/log/pods';
const LOG_FILE = `${LOG_DIR}/sim-etcd.log`;
/** How often the manifest is compared with what runs. */
const POLL_INTERVAL_MS = 500;
/** How long stopping waits for etcd to exit before it signals again. */
const STOP_TIMEOUT_MS = 10_000;

interface Running {
  child: ChildProcess;
  exited: Promise<void>;
}

async function manifestText(): Promise<string | undefined> {
  return readFile(ETCD_MANIFEST, 'utf8').catch(() => undefined);
}

function digestOf(text: string | undefined): string | undefined {
  return text === undefined ? undefined : createHash('sha256').update(text).digest('hex');
}

/** Stops an etcd a killed kubelet left running (its pid file, if it still names an etcd). */
function killStale(): void {
  if (!existsSync(PID_FILE)) return;
  const pid = Number(readFileSync(PID_FILE, 'utf8').trim());
  try {
    if (pid > 0 && readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith(ETCD_BINARY)) process.kill(pid, 'SIGKILL');
  } catch {
    // Gone already.
  }
}

async function start(text: string, log: (line: string) => void): Promise<Running> {
  const pod = loadYaml(text) as { spec?: { containers?: Array<{ command?: string[] }> } };
  const args = (pod.spec?.containers?.[0]?.command ?? []).slice(1);
  const dataDir = args.find((arg) => arg.startsWith('--data-dir='))?.slice('--data-dir='.length);
  if (dataDir !== undefined) await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await mkdir(LOG_DIR, { recursive: true });
  const logFile = await open(LOG_FILE, 'a');
  // A process group of its own: the kubelet's stop (SIGTERM to its group) must leave etcd up until the API
  // server has written what it holds; the kubelet stops it afterwards.
  const child = spawn(ETCD_BINARY, [...args, '--logger=zap', '--log-level=warn'], {
    detached: true,
    stdio: ['ignore', logFile.fd, logFile.fd],
  });
  await logFile.close();
  await writeFile(PID_FILE, `${child.pid}\n`, { mode: 0o600 });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  log(`static pod etcd started (${ETCD_BINARY}, pid ${child.pid})`);
  return { child, exited };
}

/**
 * Stops etcd as a kubelet does: SIGTERM, then SIGKILL after the grace period.
 * etcd closes its client port at SIGTERM and goes on writing its WAL for a
 * moment, so whoever waits for it to stop must wait for the process, not only
 * for the port (edgeadm's upgrade backup does, then archives the data).
 */
async function stop(running: Running, log: (line: string) => void): Promise<void> {
  const { child } = running;
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await running.exited;
    clearTimeout(timer);
  }
  await rm(PID_FILE, { force: true });
  log('static pod etcd stopped');
}

/**
 * Runs the etcd static Pod and keeps it matching its manifest until the
 * kubelet stops; `beforeStop` is awaited before a change of manifest stops
 * it (the API server on it stops first). `stopped` settles once the kubelet
 * is stopping and {@link stopNow} was called.
 */
export function runEtcdStaticPod(
  isStopping: () => boolean,
  log: (line: string) => void,
  beforeStop: () => Promise<void>,
): { stopNow(): Promise<void> } {
  killStale();
  let running: Running | undefined;
  let digest: string | undefined;
  const loop = (async (): Promise<void> => {
    while (!isStopping()) {
      const text = await manifestText();
      const now = digestOf(text);
      if (now !== digest || (running !== undefined && running.child.exitCode !== null)) {
        if (running !== undefined) {
          if (now !== digest) {
            log(`${ETCD_MANIFEST} ${text === undefined ? 'removed' : 'changed'}: stopping the static pod etcd`);
            await beforeStop();
          }
          await stop(running, log);
          running = undefined;
        }
        digest = now;
        if (text !== undefined && !isStopping()) running = await start(text, log);
      }
      await sleep(POLL_INTERVAL_MS);
    }
  })();
  return {
    async stopNow() {
      await loop;
      if (running !== undefined) await stop(running, log);
    },
  };
}
