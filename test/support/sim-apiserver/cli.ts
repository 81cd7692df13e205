/**
 * The simulated API server as a process (see main.ts): parses
 * `--listen host:port --data-dir DIR`, keeps its CA, admin token and objects
 * in DIR so a restarted process carries on where it stopped, writes
 * `ca.crt`, `admin.kubeconfig` and finally `ready` when serving, and stops
 * cleanly on SIGTERM or SIGINT.
 *
 * DIR layout: ca.crt, ca.key, admin-token, admin.kubeconfig, state.json
 * (the objects, rewritten shortly after each change), ready (the URL).
 *
 * With `--etcd-endpoint URL --internal-port N` the objects are etcd's, not
 * state.json's (etcd-datastore.ts: the instance that leads serves them on
 * N, every instance's public port reaches it): a simulated HA control plane.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadAll as loadAllYaml } from 'js-yaml';
import { SimCertificateAuthority } from './pki.js';
import { readSimTiming } from './sim-timing.js';
import { startSimApiServer } from './sim-apiserver.js';
import type { SimApiServer } from './sim-apiserver.js';
import type { KubeObject, StoreSnapshot } from './store.js';
import type { NodeLifecycleOptions } from './node-lifecycle.js';
import type { TokenIdentity } from './authn.js';
import { startEtcdBacked } from './etcd-datastore.js';
import type { SimApiServerOptions } from './sim-apiserver.js';

/** Delay between a change and the snapshot that records it (batches bursts of writes). */
export const SNAPSHOT_DELAY_MS = 100;

const USAGE = `usage: main.ts --listen HOST:PORT --data-dir DIR [--token TOKEN=USER[:GROUP,...]]... [--objects FILE.yaml] [--version vX.Y.Z+sim] [--san NAME]... [--anonymous-auth=false] [--cacerts-file FILE] [--k3s-agent-certificates] [--csr-controllers] [--node-lifecycle] [--etcd-endpoint URL --internal-port PORT]

A SIMULATED Kubernetes API server for edgeadm's tests (not kube-apiserver).`;

function parseListen(value: string): { host: string; port: number } {
  const match = /^\[?([^\]]*?)\]?:(\d+)$/.exec(value);
  if (!match) throw new Error(`--listen must be HOST:PORT, got "${value}"`);
  return { host: match[1] || '127.0.0.1', port: Number(match[2]) };
}

function parseToken(value: string): [string, TokenIdentity] {
  const match = /^([^=]+)=([^:]+)(?::(.*))?$/.exec(value);
  if (!match) throw new Error(`--token must be TOKEN=USER[:GROUP,...], got "${value}"`);
  const groups = (match[3] ?? '').split(',').filter((g) => g.length > 0);
  return [match[1] ?? '', { user: match[2] ?? '', groups }];
}

async function readIfExists(path: string): Promise<string | undefined> {
  return existsSync(path) ? readFile(path, 'utf8') : undefined;
}

async function writeAtomically(path: string, text: string, mode: number): Promise<void> {
  const temporary = `${path}.tmp-${process.pid}`;
  await writeFile(temporary, text, { mode });
  await rename(temporary, path);
}

/** The node lifecycle's periods: Kubernetes' own, or those a test shortened (sim-timing.ts). */
function nodeLifecycleFromTiming(): NodeLifecycleOptions {
  const timing = readSimTiming();
  return {
    ...(timing.nodeMonitorPeriodMs ? { monitorPeriodMs: timing.nodeMonitorPeriodMs } : {}),
    ...(timing.nodeMonitorGracePeriodMs ? { gracePeriodMs: timing.nodeMonitorGracePeriodMs } : {}),
    ...(timing.tolerationSecondMs ? { tolerationSecondMs: timing.tolerationSecondMs } : {}),
  };
}

/**
 * Runs the server until a signal arrives (or `stop` settles: the simulated
 * kubelet restarts a static pod whose manifest changed); returns the
 * process exit code.
 */
export async function runCli(argv: string[], options: { stop?: Promise<void> } = {}): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        listen: { type: 'string' },
        'data-dir': { type: 'string' },
        token: { type: 'string', multiple: true },
        objects: { type: 'string' },
        version: { type: 'string' },
        san: { type: 'string', multiple: true },
        'anonymous-auth': { type: 'string' },
        'cacerts-file': { type: 'string' },
        'k3s-agent-certificates': { type: 'boolean' },
        'csr-controllers': { type: 'boolean' },
        'node-lifecycle': { type: 'boolean' },
        'etcd-endpoint': { type: 'string' },
        'internal-port': { type: 'string' },
        help: { type: 'boolean' },
      },
    }));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (!values.listen || !values['data-dir']) {
    process.stderr.write(`--listen and --data-dir are required\n${USAGE}\n`);
    return 2;
  }
  const anonymousAuth = values['anonymous-auth'];
  if (anonymousAuth !== undefined && anonymousAuth !== 'true' && anonymousAuth !== 'false') {
    process.stderr.write(`--anonymous-auth must be true or false\n${USAGE}\n`);
    return 2;
  }
  const { host, port } = parseListen(values.listen);
  const dataDir = values['data-dir'];
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await rm(join(dataDir, 'ready'), { force: true });

  let caCert = await readIfExists(join(dataDir, 'ca.crt'));
  let caKey = await readIfExists(join(dataDir, 'ca.key'));
  if (!caCert || !caKey) {
    const ca = await SimCertificateAuthority.generate();
    caCert = ca.certPem;
    caKey = ca.keyPem;
    await writeAtomically(join(dataDir, 'ca.key'), caKey, 0o600);
    await writeAtomically(join(dataDir, 'ca.crt'), caCert, 0o644);
  }
  const adminToken = (await readIfExists(join(dataDir, 'admin-token')))?.trim() || randomBytes(24).toString('hex');
  const objects = values.objects
    ? (loadAllYaml(await readFile(values.objects, 'utf8')) as KubeObject[]).filter(Boolean)
    : [];
  /** What every way of running starts the API server with (not where it listens, nor its objects). */
  const common: SimApiServerOptions = {
    adminToken,
    ...(values.san ? { sans: values.san } : {}),
    ca: { certPem: caCert, keyPem: caKey },
    ...(values.version ? { gitVersion: values.version } : {}),
    ...(anonymousAuth === undefined ? {} : { anonymousAuth: anonymousAuth === 'true' }),
    ...(values['cacerts-file'] ? { caCertsFile: values['cacerts-file'] } : {}),
    ...(values['k3s-agent-certificates'] ? { k3sAgentCertificates: true } : {}),
    ...(values['csr-controllers'] ? { csrControllers: true } : {}),
    ...(values['node-lifecycle'] ? { nodeLifecycle: nodeLifecycleFromTiming() } : {}),
    tokens: Object.fromEntries((values.token ?? []).map(parseToken)),
  };
  if (values['etcd-endpoint'] !== undefined) {
    const internalPort = Number(values['internal-port']);
    if (!Number.isInteger(internalPort) || internalPort <= 0) {
      process.stderr.write(`--etcd-endpoint needs --internal-port\n${USAGE}\n`);
      return 2;
    }
    return runOnEtcd({
      host,
      port,
      internalPort,
      dataDir,
      etcdEndpoint: values['etcd-endpoint'],
      common,
      objects,
      ...(options.stop ? { stop: options.stop } : {}),
    });
  }
  const stateText = await readIfExists(join(dataDir, 'state.json'));
  const snapshot = stateText ? (JSON.parse(stateText) as StoreSnapshot) : undefined;

  let snapshotTimer: NodeJS.Timeout | undefined;
  let pendingWrite: Promise<void> = Promise.resolve();
  // Writes are chained so that an older snapshot never lands after a newer one.
  const saveSnapshot = (from: SimApiServer): Promise<void> => {
    const text = JSON.stringify(from.store.snapshot());
    pendingWrite = pendingWrite.then(() => writeAtomically(join(dataDir, 'state.json'), text, 0o600));
    return pendingWrite;
  };

  const server: SimApiServer = await startSimApiServer({
    ...common,
    host,
    port,
    ...(snapshot ? { snapshot } : { objects }),
    onChange: () => {
      if (snapshotTimer) return;
      snapshotTimer = setTimeout(() => {
        snapshotTimer = undefined;
        void saveSnapshot(server);
      }, SNAPSHOT_DELAY_MS);
    },
  });
  if (snapshot && objects.length > 0) for (const object of objects) server.setObject(object);

  await writeAtomically(join(dataDir, 'admin-token'), `${adminToken}\n`, 0o600);
  await writeAtomically(join(dataDir, 'admin.kubeconfig'), server.kubeconfig(), 0o600);
  await saveSnapshot(server);
  await writeAtomically(join(dataDir, 'ready'), `${server.url}\n`, 0o644);
  process.stderr.write(`sim-apiserver (a simulation for tests, not kube-apiserver) serving at ${server.url}\n`);

  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
    void options.stop?.then(resolve);
  });
  if (snapshotTimer) clearTimeout(snapshotTimer);
  await server.stop();
  await saveSnapshot(server);
  await rm(join(dataDir, 'ready'), { force: true });
  return 0;
}

/**
 * Runs an instance on etcd (etcd-datastore.ts) until a signal arrives: no
 * state.json, the CA and admin token in DIR as always (a joining control
 * plane writes the cluster's there first). A state.json left in DIR by an
 * earlier run without etcd seeds an etcd that is still empty.
 */
async function runOnEtcd(input: {
  host: string;
  port: number;
  internalPort: number;
  dataDir: string;
  etcdEndpoint: string;
  common: SimApiServerOptions;
  objects: KubeObject[];
  stop?: Promise<void>;
}): Promise<number> {
  const { dataDir, common } = input;
  const url = `https://${input.host.includes(':') ? `[${input.host}]` : input.host}:${input.port}`;
  const earlierText = await readIfExists(join(dataDir, 'state.json'));
  const earlier = earlierText ? (JSON.parse(earlierText) as StoreSnapshot) : undefined;
  const instance = await startEtcdBacked({
    host: input.host,
    port: input.port,
    internalPort: input.internalPort,
    etcdEndpoint: input.etcdEndpoint,
    ca: common.ca!,
    sans: common.sans ?? [],
    gitVersion: common.gitVersion ?? 'v0.0.0',
    log: (line) => process.stderr.write(`sim-apiserver (a simulation for tests, on etcd): ${line}\n`),
    async startApiServer(snapshot) {
      // An empty etcd under an instance that kept its objects in DIR before (a simulated kubeadm control plane
      // put on stacked etcd when it became one that others join): those objects go to etcd.
      snapshot ??= earlier;
      const server = await startSimApiServer({
        ...common,
        host: input.host,
        port: input.internalPort,
        ...(snapshot ? { snapshot } : { objects: input.objects }),
      });
      if (snapshot) for (const object of input.objects) server.setObject(object);
      return server;
    },
  });
  await instance.ready;
  await writeAtomically(join(dataDir, 'admin-token'), `${common.adminToken!}\n`, 0o600);
  await writeAtomically(
    join(dataDir, 'admin.kubeconfig'),
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `- name: sim\n  cluster:\n    server: ${url}\n    certificate-authority-data: ${Buffer.from(common.ca!.certPem).toString('base64')}`,
      `users:\n- name: admin\n  user:\n    token: ${common.adminToken!}`,
      'contexts:\n- name: sim\n  context:\n    cluster: sim\n    user: admin',
      'current-context: sim',
      '',
    ].join('\n'),
    0o600,
  );
  await writeAtomically(join(dataDir, 'ready'), `${url}\n`, 0o644);
  process.stderr.write(`sim-apiserver (a simulation for tests, not kube-apiserver) serving at ${url}, on etcd\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
    void input.stop?.then(resolve);
  });
  await instance.stop();
  await rm(join(dataDir, 'ready'), { force: true });
  return 0;
}
