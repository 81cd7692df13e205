/**
 * The etcd member a SIMULATED k3s server (not k3s) runs when it is part of
 * an HA control plane: a REAL etcd (Debian's /usr/bin/etcd), one member per
 * server, as k3s embeds one (`cluster-init` on the first server; joining
 * servers add themselves). Traced to k3s pkg/etcd/etcd.go:
 *
 * - the member's data is `server/db/etcd`, and its name, `<node name>-<8
 *   hex>`, is kept in `db/etcd/name` and reused at every start (`setName`);
 * - a member whose WAL directory exists (`IsInitialized`) starts on its data
 *   and joins nothing: a restarted server rejoins its peers as it was;
 * - a new joining server lists the members through an existing one
 *   (`join`): one with its own name and address means it was added already
 *   (no second add); one with its node name under another member name is
 *   refused ("duplicate node name found"); otherwise it adds itself and
 *   starts with `initial-cluster-state existing` and the member list.
 *
 * What differs, on purpose (README.md, "HA on etcd"): plain HTTP between
 * members and clients (k3s: TLS with its etcd CAs); the member is added as a
 * voter (k3s adds a learner and promotes it once it has caught up); the
 * joining server finds a member at the address of the server it joins
 * (k3s asks that server's supervisor, `/db/info`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, open, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';

/** The etcd binary (Debian's etcd-server package). */
export const ETCD_BINARY = '/usr/bin/etcd';
/** etcd's client and peer ports, as k3s's embedded etcd uses them. */
export const ETCD_CLIENT_PORT = 2379;
export const ETCD_PEER_PORT = 2380;
/** How long stopping waits for etcd to exit after SIGTERM before SIGKILL. */
const ETCD_STOP_TIMEOUT_MS = 10_000;
/** How long a joining member keeps trying to be added (within edgeadm's 180 s wait for the new server). */
const JOIN_TIMEOUT_MS = 90_000;
/** How long one attempt waits to reach a member. */
const JOIN_DIAL_TIMEOUT_MS = 5_000;
/** Pause between attempts. */
const JOIN_RETRY_INTERVAL_MS = 1_000;

/** A running member. */
export interface EmbeddedEtcd {
  /** Its client URL (what the API server uses). */
  clientUrl: string;
  /** SIGTERM, then waits for it to exit. */
  stop(): Promise<void>;
}

/** Where the member keeps its data, as k3s: `<server dir>/db/etcd`. */
export function etcdDataDir(serverDir: string): string {
  return join(serverDir, 'db', 'etcd');
}

/** Whether the member was started before (k3s: its WAL directory exists). */
export function isEtcdInitialized(serverDir: string): boolean {
  return existsSync(join(etcdDataDir(serverDir), 'member', 'wal'));
}

/** Kills an etcd left running by a server that was killed (its pid file, if it still names an etcd). */
function killStale(pidFile: string): void {
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  try {
    if (pid > 0 && readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith(ETCD_BINARY)) process.kill(pid, 'SIGKILL');
  } catch {
    // Gone already.
  }
}

/**
 * Starts this server's member: a new cluster of one (`join` undefined), a
 * member added through `join` (an existing member's client URL), or, when
 * it was started before, on its data.
 */
export async function startEmbeddedEtcd(input: {
  serverDir: string;
  nodeName: string;
  address: string;
  join?: string;
  /** Ports other than etcd's own (a test running members on one address). */
  ports?: { client: number; peer: number };
  log(line: string): void;
}): Promise<EmbeddedEtcd> {
  const dataDir = etcdDataDir(input.serverDir);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const nameFile = join(dataDir, 'name');
  const name = existsSync(nameFile)
    ? (await readFile(nameFile, 'utf8')).trim()
    : `${input.nodeName}-${randomBytes(4).toString('hex')}`;
  await writeFile(nameFile, name, { mode: 0o600 });
  const clientUrl = `http://${input.address}:${input.ports?.client ?? ETCD_CLIENT_PORT}`;
  const peerUrl = `http://${input.address}:${input.ports?.peer ?? ETCD_PEER_PORT}`;
  const args = [
    `--name=${name}`,
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${clientUrl}`,
    `--advertise-client-urls=${clientUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    '--logger=zap',
    '--log-level=warn',
  ];
  if (!isEtcdInitialized(input.serverDir)) {
    if (input.join === undefined) {
      args.push(`--initial-cluster=${name}=${peerUrl}`, '--initial-cluster-state=new');
    } else {
      args.push(
        `--initial-cluster=${await addSelfRetrying(input.join, name, input.nodeName, input.address, peerUrl, input.log)}`,
      );
      args.push('--initial-cluster-state=existing');
    }
  }
  const pidFile = join(input.serverDir, 'db', 'etcd.pid');
  killStale(pidFile);
  const logFile = await open(join(input.serverDir, 'db', 'etcd.log'), 'a');
  // A process group of its own: stopping the server (SIGTERM to its group) must leave etcd up until the
  // server has written what it holds and resigned; the server stops it afterwards.
  const child: ChildProcess = spawn(ETCD_BINARY, args, { detached: true, stdio: ['ignore', logFile.fd, logFile.fd] });
  await logFile.close();
  await writeFile(pidFile, `${child.pid}\n`, { mode: 0o600 });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  input.log(`etcd member ${name} started (${clientUrl})`);
  return {
    clientUrl,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), ETCD_STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
      await rm(pidFile, { force: true });
    },
  };
}

/**
 * {@link addSelf}, the member list read again each time, until it succeeds
 * or the join's time is up: etcd adds a voter only once every member has
 * been connected for a while (its strict reconfiguration check: "unhealthy
 * cluster"), and the previous server may have joined seconds ago on a busy
 * machine. k3s adds a learner, which that check does not hold back, and a
 * k3s whose join fails exits for its service manager to start it again.
 * An attempt whose add went through is seen as added by the next.
 */
async function addSelfRetrying(
  joinUrl: string,
  name: string,
  nodeName: string,
  address: string,
  peerUrl: string,
  log: (line: string) => void,
): Promise<string> {
  const deadline = Date.now() + JOIN_TIMEOUT_MS;
  for (;;) {
    try {
      return await addSelf(joinUrl, name, nodeName, address, peerUrl, log);
    } catch (error) {
      const message = (error as Error).message;
      if (/duplicate node name/.test(message) || Date.now() > deadline) throw error;
      log(`etcd did not add the member yet (${message}); retrying`);
      await new Promise((resolve) => setTimeout(resolve, JOIN_RETRY_INTERVAL_MS));
    }
  }
}

/** Adds this member through `join` as k3s's `join` does; returns the `--initial-cluster` value. */
async function addSelf(
  joinUrl: string,
  name: string,
  nodeName: string,
  address: string,
  peerUrl: string,
  log: (line: string) => void,
): Promise<string> {
  const client = new Etcd3({ hosts: joinUrl, dialTimeout: JOIN_DIAL_TIMEOUT_MS });
  try {
    const { members = [] } = await client.cluster.memberList({});
    let isAdded = false;
    const cluster: string[] = [];
    for (const member of members) {
      const peer = member.peerURLs?.[0];
      const host = peer === undefined ? '' : new URL(peer).hostname;
      // An added member that has not started yet has no name; at our address it is us.
      const memberName = member.name === '' && host === address ? name : member.name;
      if (memberName === name && host === address) isAdded = true;
      if (peer !== undefined) cluster.push(`${memberName}=${peer}`);
      const memberNode =
        memberName.lastIndexOf('-') > 1 ? memberName.slice(0, memberName.lastIndexOf('-')) : memberName;
      if (memberName !== name && memberNode === nodeName) {
        throw new Error('duplicate node name found, please use a unique name for this node');
      }
    }
    if (!isAdded) {
      log(`Adding member ${name}=${peerUrl} to etcd cluster [${cluster.join(' ')}]`);
      await client.cluster.memberAdd({ peerURLs: [peerUrl] });
      cluster.push(`${name}=${peerUrl}`);
    }
    return cluster.join(',');
  } finally {
    client.close();
  }
}
