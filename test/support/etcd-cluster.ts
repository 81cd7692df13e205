/**
 * A REAL three-member etcd (Debian's etcd-server, /usr/bin/etcd) on loopback
 * ports for the hub's etcd suites: client TLS with client certificates
 * (made here with openssl: a CA, a serving certificate for 127.0.0.1, a
 * client certificate), peers on plain loopback HTTP. Each member can be
 * killed (SIGKILL) and restarted from its data directory, so tests can lose
 * one member, lose quorum (two of three), and bring it back.
 *
 * Everything lives under a directory in TMPDIR, which the suite's global
 * set-up (test-temp-root.ts) points at the run's own temporary root.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** The etcd binary (Debian's etcd-server package). */
export const ETCD_BINARY = '/usr/bin/etcd';
/** Bound of every wait for etcd (a safety net on busy CI, not a timing assertion). */
const ETCD_READY_WAIT_MS = 60_000;
const POLL_MS = 100;

/** The TLS files a client of the test etcd uses. */
export interface EtcdClientTls {
  caFile: string;
  certFile: string;
  keyFile: string;
}

/** One member of the test etcd. */
export interface EtcdMember {
  name: string;
  clientUrl: string;
  peerUrl: string;
  dataDir: string;
  /** Whether its process runs. */
  isRunning(): boolean;
}

/** A running three-member etcd. */
export interface EtcdTestCluster {
  dir: string;
  members: EtcdMember[];
  /** Every member's client URL. */
  endpoints: string[];
  tls: EtcdClientTls;
  /** SIGKILLs member `index` and waits for its process to end. */
  kill(index: number): Promise<void>;
  /** Restarts member `index` from its data directory and waits until it serves. */
  restart(index: number): Promise<void>;
  /** Kills two members: the cluster has no quorum (the third still runs). */
  loseQuorum(): Promise<void>;
  /** Restarts every stopped member and waits until the cluster is healthy. */
  restoreQuorum(): Promise<void>;
  /** The index of a running member that is not the raft leader (killing it costs no election). */
  followerIndex(): Promise<number>;
  /** Whether a member answers /health with `true` (it has a leader and quorum). */
  isHealthy(index: number): Promise<boolean>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: 'pipe' });
}

/** A CA, a serving certificate for loopback and a client certificate, by openssl. */
function makeTls(dir: string): EtcdClientTls & { serverCertFile: string; serverKeyFile: string } {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ecKey = (name: string): void =>
    openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', name], dir);
  ecKey('ca.key');
  openssl(
    ['req', '-x509', '-new', '-key', 'ca.key', '-days', '2', '-subj', '/CN=edgeadm-test-etcd-ca', '-out', 'ca.crt'],
    dir,
  );
  const issue = (name: string, subject: string, extensions: string): void => {
    ecKey(`${name}.key`);
    openssl(['req', '-new', '-key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`], dir);
    writeFileSync(join(dir, `${name}.ext`), extensions);
    openssl(
      [
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-days',
        '2',
        '-extfile',
        `${name}.ext`,
        '-out',
        `${name}.crt`,
      ],
      dir,
    );
  };
  issue('server', '/CN=etcd', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
  issue('client', '/CN=edgeadm-hub', 'extendedKeyUsage=clientAuth\n');
  return {
    caFile: join(dir, 'ca.crt'),
    certFile: join(dir, 'client.crt'),
    keyFile: join(dir, 'client.key'),
    serverCertFile: join(dir, 'server.crt'),
    serverKeyFile: join(dir, 'server.key'),
  };
}

/** GET /health on one member with the client certificate. */
function health(clientUrl: string, tls: EtcdClientTls): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(
      `${clientUrl}/health`,
      {
        ca: readFileSync(tls.caFile),
        cert: readFileSync(tls.certFile),
        key: readFileSync(tls.keyFile),
        timeout: 2000,
      },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        res.on('end', () => resolve(res.statusCode === 200 && /"health":\s*"true"/.test(body)));
        res.on('error', () => resolve(false));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(false));
    req.end();
  });
}

/** POST /v3/maintenance/status (the gRPC gateway): the member's id and its leader's. */
function memberStatus(
  clientUrl: string,
  tls: EtcdClientTls,
): Promise<{ memberId: string; leader: string } | undefined> {
  return new Promise((resolve) => {
    const req = request(
      `${clientUrl}/v3/maintenance/status`,
      {
        method: 'POST',
        ca: readFileSync(tls.caFile),
        cert: readFileSync(tls.certFile),
        key: readFileSync(tls.keyFile),
        timeout: 2000,
      },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        res.on('end', () => {
          try {
            const parsed = JSON.parse(body) as { header?: { member_id?: string }; leader?: string };
            resolve({ memberId: String(parsed.header?.member_id), leader: String(parsed.leader) });
          } catch {
            resolve(undefined);
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(undefined));
    req.end('{}');
  });
}

/** Starts a three-member etcd with client TLS on loopback. */
export async function startEtcdCluster(): Promise<EtcdTestCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'edgeadm-etcd-'));
  const tls = makeTls(join(dir, 'tls'));
  const ports = await Promise.all(Array.from({ length: 6 }, () => freePort()));
  type RunningMember = EtcdMember & { process?: ChildProcess; log: string };
  const members: RunningMember[] = [0, 1, 2].map((i): RunningMember => ({
    name: `m${i}`,
    clientUrl: `https://127.0.0.1:${ports[i * 2]}`,
    peerUrl: `http://127.0.0.1:${ports[i * 2 + 1]}`,
    dataDir: join(dir, `m${i}`),
    log: '',
    isRunning(this: RunningMember) {
      return this.process !== undefined && this.process.exitCode === null && this.process.signalCode === null;
    },
  }));
  const initialCluster = members.map((m) => `${m.name}=${m.peerUrl}`).join(',');

  const launch = (index: number): void => {
    const member = members[index]!;
    const child = spawn(
      ETCD_BINARY,
      [
        `--name=${member.name}`,
        `--data-dir=${member.dataDir}`,
        `--listen-client-urls=${member.clientUrl}`,
        `--advertise-client-urls=${member.clientUrl}`,
        `--listen-peer-urls=${member.peerUrl}`,
        `--initial-advertise-peer-urls=${member.peerUrl}`,
        `--initial-cluster=${initialCluster}`,
        '--initial-cluster-state=new',
        '--initial-cluster-token=edgeadm-test',
        `--cert-file=${tls.serverCertFile}`,
        `--key-file=${tls.serverKeyFile}`,
        `--trusted-ca-file=${tls.caFile}`,
        '--client-cert-auth',
        // Shorter than the defaults (100 ms / 1 s) would make elections flap on a busy shared CI machine.
        '--heartbeat-interval=100',
        '--election-timeout=1000',
        '--logger=zap',
        '--log-level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    member.log = '';
    const keep = (chunk: Buffer): void => {
      member.log = (member.log + chunk.toString('utf8')).slice(-20_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    member.process = child;
  };

  const waitUntil = async (what: string, check: () => Promise<boolean>): Promise<void> => {
    const deadline = Date.now() + ETCD_READY_WAIT_MS;
    while (Date.now() < deadline) {
      if (await check()) return;
      await sleep(POLL_MS);
    }
    throw new Error(
      `etcd: ${what} not reached; logs:\n${members.map((m) => `${m.name}: ${m.log.slice(-3000)}`).join('\n')}`,
    );
  };

  const kill = async (index: number): Promise<void> => {
    const child = members[index]!.process;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const ended = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await ended;
  };

  const allHealthy = async (): Promise<boolean> =>
    (await Promise.all(members.map((m) => m.isRunning() && health(m.clientUrl, tls)))).every(Boolean);

  for (let i = 0; i < members.length; i += 1) launch(i);
  await waitUntil('a healthy three-member cluster', allHealthy);

  const cluster: EtcdTestCluster = {
    dir,
    members,
    endpoints: members.map((m) => m.clientUrl),
    tls: { caFile: tls.caFile, certFile: tls.certFile, keyFile: tls.keyFile },
    kill,
    restart: async (index) => {
      await kill(index);
      launch(index);
      await waitUntil(`member ${index} healthy`, () => health(members[index]!.clientUrl, tls));
    },
    loseQuorum: async () => {
      await kill(1);
      await kill(2);
    },
    restoreQuorum: async () => {
      for (let i = 0; i < members.length; i += 1) if (!members[i]!.isRunning()) launch(i);
      await waitUntil('a healthy cluster again', allHealthy);
    },
    isHealthy: (index) => health(members[index]!.clientUrl, tls),
    followerIndex: async () => {
      for (let i = 0; i < members.length; i += 1) {
        const status = members[i]!.isRunning() ? await memberStatus(members[i]!.clientUrl, tls) : undefined;
        if (status !== undefined && status.memberId !== status.leader) return i;
      }
      throw new Error('etcd: no running follower');
    },
    stop: async () => {
      await Promise.all(members.map((_, i) => kill(i)));
    },
  };
  return cluster;
}

/** A key prefix of its own for one test, so tests sharing one etcd never see each other's keys. */
export function freshEtcdPrefix(): string {
  return `/edgeadm-test/${Math.random().toString(36).slice(2, 10)}/`;
}

/** Connection options of the hub's etcd store for the test etcd under `keyPrefix`. */
export function etcdConnectionOptionsFor(
  cluster: EtcdTestCluster,
  keyPrefix: string,
): { endpoints: string[]; caFile: string; certFile: string; keyFile: string; keyPrefix: string } {
  return {
    endpoints: cluster.endpoints,
    caFile: cluster.tls.caFile,
    certFile: cluster.tls.certFile,
    keyFile: cluster.tls.keyFile,
    keyPrefix,
  };
}

/**
 * The `hub serve` / `hub migrate` flags of an etcd store on the test etcd:
 * its endpoints and client TLS, the encryption key file, and the key prefix
 * when given (else the hub's default prefix).
 */
export function hubEtcdStoreFlags(
  cluster: EtcdTestCluster,
  options: { encryptionKeyFile: string; keyPrefix?: string },
): string[] {
  return [
    '--etcd-endpoints',
    cluster.endpoints.join(','),
    '--etcd-cacert',
    cluster.tls.caFile,
    '--etcd-cert',
    cluster.tls.certFile,
    '--etcd-key',
    cluster.tls.keyFile,
    ...(options.keyPrefix === undefined ? [] : ['--etcd-key-prefix', options.keyPrefix]),
    '--encryption-key-file',
    options.encryptionKeyFile,
  ];
}
