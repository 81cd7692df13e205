/**
 * A SIMULATED k3s — not k3s — for edgeadm's integration tests. The real k3s
 * binary cannot be downloaded on the project's machines, so the fixture
 * install package ships this stand-in instead, and edgeadm's real init, join
 * and reset code paths install, configure, start and remove it on the test
 * hosts exactly as they would the real binary.
 *
 * What it does, and which real k3s behaviour it stands in for:
 *
 * - `k3s server`: reads /etc/rancher/k3s/config.yaml, runs the simulated API
 *   server (../sim-apiserver) on `<advertise-address>:6443` with its data
 *   under /var/lib/rancher/k3s/server/sim-apiserver, and writes what k3s
 *   writes: tls/server-ca.crt, /etc/rancher/k3s/k3s.yaml (the admin
 *   kubeconfig, server https://127.0.0.1:6443 like k3s), server/token and
 *   server/node-token (`K10<ca hash>::server:<password>`). It registers its
 *   own Node (k3s servers run an agent) and keeps it Ready.
 * - The server's API refuses anonymous requests (k3s runs kube-apiserver
 *   with anonymous-auth=false) and serves /cacerts, unauthenticated, with
 *   the bytes of tls/server-ca.crt, as k3s's supervisor does.
 * - `k3s agent`: reads the same config file (`server`, `token`), gets
 *   /cacerts as k3s's agent does and checks the token's `K10` hash against
 *   those bytes, asks the supervisor what k3s's agent asks at every start
 *   (its configuration, the CAs, its serving and client certificates as
 *   `system:node:<name>`, kube-proxy's and the controller's), in k3s's
 *   order and with its token and, once it has one, its own certificate,
 *   then asks /v1-k3s/apiservers, waits for /readyz beside its tunnel
 *   (ending itself after k3s's DefaultAPIServerReadyTimeout), opens its
 *   /v1-k3s/connect tunnel to every address it got, and only then writes
 *   agent/kubelet.kubeconfig and registers a Node named after the host,
 *   then keeps it Ready with a heartbeat. Only `system:nodes` may write
 *   Nodes: the token gets no Node rights.
 * - See README.md for each behaviour's source in k3s and what differs.
 * - `k3s --version`, `/version` and the Nodes' kubelet version report the
 *   package's version (`v1.31.2+k3s1`), or `v1.30.4+sim` when it names none.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { appendFile, open, readdir, readFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { hostname } from 'node:os';
import type { Duplex } from 'node:stream';
import { join } from 'node:path';
import { dump as dumpYaml, load as loadYaml } from 'js-yaml';
import {
  call,
  expectOk,
  keepReady,
  nodeRegistrationObjects,
  registerNode,
  simLogger,
  simReportedVersion,
  sleep,
  writeAtomically,
} from '../sim-node.js';
import { runPodSource } from '../sim-kubelet-pods.js';
import { readSimTiming } from '../sim-apiserver/sim-timing.js';
import { ETCD_CLIENT_PORT, isEtcdInitialized, startEmbeddedEtcd, type EmbeddedEtcd } from './embedded-etcd.js';

/** Where k3s reads its configuration. */
export const K3S_CONFIG_PATH = '/etc/rancher/k3s/config.yaml';
/** The admin kubeconfig k3s writes. */
export const K3S_ADMIN_KUBECONFIG = '/etc/rancher/k3s/k3s.yaml';
export const K3S_SERVER_DIR = '/var/lib/rancher/k3s/server';
export const K3S_AGENT_DIR = '/var/lib/rancher/k3s/agent';
/** The version the simulation reports when its package names none; `+sim` says what it is. */
export const SIM_K3S_VERSION = 'v1.30.4+sim';
/**
 * The version this binary reports, as k3s does from one binary: `--version`,
 * the API server's `/version` gitVersion and the kubelet version of its
 * Node, all `v1.31.2+k3s1` for a package built for that release (see
 * simExecutableScript in fixture.ts). Upgrading k3s is swapping the binary
 * and restarting it; the restarted simulation reports the new one's.
 */
const VERSION = simReportedVersion(SIM_K3S_VERSION);
/** The API port, as k3s's default `https-listen-port`. */
export const SIM_K3S_PORT = 6443;
/** How long to wait between attempts while the server is not reachable yet. */
const RETRY_INTERVAL_MS = 1_000;
/** How long the server waits for its embedded API server to be ready. */
const API_READY_TIMEOUT_MS = 60_000;

type K3sConfig = Record<string, unknown>;

const log = simLogger('sim-k3s (SIMULATED k3s for tests)');

async function readConfig(path: string): Promise<K3sConfig> {
  if (!existsSync(path)) return {};
  return ((loadYaml(await readFile(path, 'utf8')) as K3sConfig | null) ?? {}) as K3sConfig;
}

function stringOf(config: K3sConfig, key: string): string | undefined {
  const value = config[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function listOf(config: K3sConfig, key: string): string[] {
  const value = config[key];
  if (Array.isArray(value)) return value.map(String);
  return typeof value === 'string' ? [value] : [];
}

function labelsOf(config: K3sConfig): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const entry of listOf(config, 'node-label')) {
    const [key, ...rest] = entry.split('=');
    if (key) labels[key] = rest.join('=');
  }
  return labels;
}

/** `node-taint` entries (`key=value:Effect`), as the kubelet's --register-with-taints takes them. */
function taintsOf(config: K3sConfig): Array<{ key: string; value?: string; effect: string }> {
  return listOf(config, 'node-taint').map((entry) => {
    const [keyValue = '', effect = ''] = entry.split(':');
    const [key = '', ...value] = keyValue.split('=');
    return { key, ...(value.length > 0 ? { value: value.join('=') } : {}), effect };
  });
}

/** The `kubelet-arg` values as a map (`kubeconfig=PATH` → kubeconfig: PATH); later ones win, as in k3s. */
function kubeletArgsOf(config: K3sConfig): Map<string, string> {
  const args = new Map<string, string>();
  for (const entry of listOf(config, 'kubelet-arg')) {
    const [key = '', ...value] = entry.replace(/^--/, '').split('=');
    args.set(key, value.join('='));
  }
  return args;
}

/** How the (simulated) kubelet authenticates: a bearer token or a client certificate. */
type KubeletCredentials = { token: string } | { certPem: string; keyPem: string };

/** Where and as whom the (simulated) kubelet talks: its kubeconfig's server, CA and credentials. */
async function kubeletConnection(path: string): Promise<{ server: string; caPem: string } & KubeletCredentials> {
  const document = loadYaml(await readFile(path, 'utf8')) as {
    clusters?: Array<{ cluster?: Record<string, string> }>;
    users?: Array<{ user?: Record<string, string> }>;
  };
  const cluster = document.clusters?.[0]?.cluster ?? {};
  const user = document.users?.[0]?.user ?? {};
  const caPem = cluster['certificate-authority-data']
    ? Buffer.from(cluster['certificate-authority-data'], 'base64').toString('utf8')
    : await readFile(cluster['certificate-authority'] ?? '', 'utf8');
  if (!cluster.server) throw new Error(`${path} has no server`);
  if (user['client-certificate'] && user['client-key']) {
    return {
      server: cluster.server,
      caPem,
      certPem: await readFile(user['client-certificate'], 'utf8'),
      keyPem: await readFile(user['client-key'], 'utf8'),
    };
  }
  const token = user.token ?? (user.tokenFile ? (await readFile(user.tokenFile, 'utf8')).trim() : '');
  if (!token) throw new Error(`${path} has neither a client certificate nor a token`);
  return { server: cluster.server, caPem, token };
}

/** The Secret in which the first simulated server keeps what joining servers take (k3s keeps bootstrap data in its datastore). */
const BOOTSTRAP_SECRET = 'sim-k3s-bootstrap';
/** The user the server token authenticates as against the simulated API server (k3s's supervisor checks it instead). */
const SUPERVISOR_USER = 'sim-k3s-supervisor';

/** The password of a server token file (`K10<hash>::server:<password>`). */
function serverPasswordOf(tokenText: string): string {
  const credentials = parseK10(tokenText).credentials;
  if (!credentials.startsWith('server:')) throw new Error('the server token must be K10<hash>::server:<password>');
  return credentials.slice('server:'.length);
}

/** The kubelet kubeconfig a server's own agent writes (k3s servers run an agent). */
function serverKubeletKubeconfig(server: string, caPem: string, token: string): string {
  return dumpYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'local', cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') } },
    ],
    // The simulation's server agent acts with the admin token (real k3s gives it a kubelet certificate).
    users: [{ name: 'kubelet', user: { token } }],
    contexts: [{ name: 'local', context: { cluster: 'local', user: 'kubelet' } }],
    'current-context': 'local',
  });
}

/** The port the API server listens on behind the supervisor while its server leads (k3s: kube-apiserver on 6444). */
export const SIM_K3S_INTERNAL_PORT = 6444;
/** Where a server's simulated API server keeps its CA, admin token and (single server) objects. */
const API_SERVER_DATA_DIR = join(K3S_SERVER_DIR, 'sim-apiserver');

/**
 * The simulated API server's arguments, the same on every server (any
 * server of an HA control plane may come to lead and serve for all).
 */
async function apiServerArgs(listenHost: string, password: string, config: K3sConfig): Promise<string[]> {
  const objectsFile = join(K3S_SERVER_DIR, 'sim-objects.yaml');
  await writeAtomically(
    objectsFile,
    // Node writes for nodes only (a stand-in for the Node authorizer): a bootstrap token gets none.
    nodeRegistrationObjects('sim-k3s:node-registration', ['system:nodes'])
      .map((o) => dumpYaml(o))
      .join('---\n'),
    0o600,
  );
  return [
    '--listen',
    `${listenHost}:${SIM_K3S_PORT}`,
    '--data-dir',
    API_SERVER_DATA_DIR,
    '--objects',
    objectsFile,
    '--version',
    VERSION,
    // k3s starts kube-apiserver with anonymous-auth=false (pkg/daemons/control/server.go, apiServer).
    '--anonymous-auth=false',
    // k3s's supervisor serves its server CA file at /cacerts, unauthenticated, on the same port.
    '--cacerts-file',
    join(K3S_SERVER_DIR, 'tls', 'server-ca.crt'),
    // k3s's supervisor issues agents their kubelet client certificates (/v1-k3s/client-kubelet.crt).
    '--k3s-agent-certificates',
    // k3s runs kube-controller-manager (node lifecycle, taint eviction) and the default admission plugins.
    '--node-lifecycle',
    // Stands in for the k3s supervisor accepting the server token from joining servers.
    '--token',
    `${password}=${SUPERVISOR_USER}:system:masters`,
    ...listOf(config, 'tls-san').flatMap((san) => ['--san', san]),
  ];
}

/** Waits for the simulated API server's `ready` file. */
async function waitForApiServer(): Promise<void> {
  const readyFile = join(API_SERVER_DATA_DIR, 'ready');
  const deadline = Date.now() + API_READY_TIMEOUT_MS;
  while (!existsSync(readyFile)) {
    if (Date.now() > deadline) throw new Error(`the simulated API server did not start in ${API_READY_TIMEOUT_MS} ms`);
    await sleep(50);
  }
}

/** Runs `serving` to its end, then stops the server's etcd member (after the API server has resigned). */
async function thenStop(serving: Promise<number>, etcd: EmbeddedEtcd | undefined): Promise<number> {
  const code = await serving;
  await etcd?.stop();
  return code;
}

async function runServer(configPath: string): Promise<number> {
  const config = await readConfig(configPath);
  const joinServer = stringOf(config, 'server');
  if (joinServer) return runJoiningServer(config, joinServer);
  const address =
    stringOf(config, 'advertise-address') ?? stringOf(config, 'node-ip') ?? stringOf(config, 'bind-address');
  const listenHost = address ?? '127.0.0.1';
  const nodeName = stringOf(config, 'node-name') ?? hostname();
  const dataDir = API_SERVER_DATA_DIR;
  const isClusterInit = config['cluster-init'] === true;
  const tokenFile = join(K3S_SERVER_DIR, 'token');
  const password = existsSync(tokenFile)
    ? serverPasswordOf(await readFile(tokenFile, 'utf8'))
    : randomBytes(16).toString('hex');
  // cluster-init: k3s's embedded etcd, a cluster of one that servers join (pkg/etcd/etcd.go, newCluster).
  const etcd = isClusterInit
    ? await startEmbeddedEtcd({ serverDir: K3S_SERVER_DIR, nodeName, address: listenHost, log })
    : undefined;
  const { runCli } = await import('../sim-apiserver/cli.js');
  const serving = runCli([
    ...(await apiServerArgs(listenHost, password, config)),
    ...(etcd ? ['--etcd-endpoint', etcd.clientUrl, '--internal-port', String(SIM_K3S_INTERNAL_PORT)] : []),
  ]);
  await waitForApiServer();
  const caPem = await readFile(join(dataDir, 'ca.crt'), 'utf8');
  const adminToken = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim();
  const server = `https://${listenHost}:${SIM_K3S_PORT}`;
  await writeAtomically(join(K3S_SERVER_DIR, 'tls', 'server-ca.crt'), caPem, 0o644);
  const adminKubeconfig = (await readFile(join(dataDir, 'admin.kubeconfig'), 'utf8')).replace(
    /server: .*/,
    `server: https://127.0.0.1:${SIM_K3S_PORT}`,
  );
  await writeAtomically(K3S_ADMIN_KUBECONFIG, adminKubeconfig, 0o600);
  if (!existsSync(tokenFile)) {
    const hash = createHash('sha256').update(caPem).digest('hex');
    const token = `K10${hash}::server:${password}\n`;
    await writeAtomically(tokenFile, token, 0o600);
    await writeAtomically(join(K3S_SERVER_DIR, 'node-token'), token, 0o600);
  }
  await writeAtomically(
    join(K3S_AGENT_DIR, 'kubelet.kubeconfig'),
    serverKubeletKubeconfig(server, caPem, adminToken),
    0o600,
  );
  // The bootstrap data joining servers take; k3s encrypts it with the server token in its datastore.
  await expectOk(
    'store the bootstrap data',
    {
      method: 'POST',
      url: `${server}/api/v1/namespaces/kube-system/secrets`,
      token: adminToken,
      caPem,
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: BOOTSTRAP_SECRET, namespace: 'kube-system' },
        data: {
          'ca.crt': Buffer.from(caPem).toString('base64'),
          'ca.key': Buffer.from(await readFile(join(dataDir, 'ca.key'), 'utf8')).toString('base64'),
          'admin-token': Buffer.from(adminToken).toString('base64'),
          // Real k3s can join servers only to a cluster whose first server runs embedded etcd.
          'cluster-init': Buffer.from(String(isClusterInit)).toString('base64'),
        },
      },
    },
    [409],
  );
  const labels = {
    'node-role.kubernetes.io/control-plane': 'true',
    'node-role.kubernetes.io/master': 'true',
    ...labelsOf(config),
  };
  const node = { server, token: adminToken, caPem, name: nodeName, version: VERSION };
  await registerNodeRetrying({ ...node, labels });
  log(`server ${nodeName} ready at ${server}${isClusterInit ? ' (cluster-init)' : ''}`);
  void keepReady(node, log);
  return thenStop(serving, etcd);
}

/** Registers a server's Node, retried while the API is not there yet (a change of leader). */
async function registerNodeRetrying(node: Parameters<typeof registerNode>[0]): Promise<void> {
  for (;;) {
    try {
      await registerNode(node);
      return;
    } catch (error) {
      log(`registering Node ${node.name}: ${(error as Error).message}`);
      await sleep(RETRY_INTERVAL_MS);
    }
  }
}

/**
 * Another server joining the first, as k3s's embedded etcd joins: the
 * server checks the CA hash of its token, takes the bootstrap data with the
 * server token, adds its own etcd member (embedded-etcd.ts) and runs the
 * simulated API server on etcd like every server (../sim-apiserver,
 * etcd-datastore.ts). Restarted on data it has (its etcd member was started
 * before), it asks the server it joined nothing: it rejoins its peers, as
 * k3s starts an initialized member on its own data.
 */
async function runJoiningServer(config: K3sConfig, joinServer: string): Promise<number> {
  const tokenText = stringOf(config, 'token');
  if (!tokenText) {
    log('a joining server needs token (the server token)');
    return 1;
  }
  const password = serverPasswordOf(tokenText);
  const address = stringOf(config, 'advertise-address') ?? stringOf(config, 'node-ip') ?? '127.0.0.1';
  const nodeName = stringOf(config, 'node-name') ?? hostname();
  const dataDir = API_SERVER_DATA_DIR;
  const isRestart =
    isEtcdInitialized(K3S_SERVER_DIR) && ['ca.crt', 'ca.key', 'admin-token'].every((f) => existsSync(join(dataDir, f)));
  if (!isRestart) {
    const { caHash } = parseK10(tokenText);
    const caPem = await fetchCaCerts(joinServer);
    const actualHash = k3sHashCa(caPem);
    if (actualHash !== caHash) {
      log(`token CA hash does not match the Cluster CA certificate hash: ${caHash} != ${actualHash}`);
      return 1;
    }
    const secret = (await expectOk('take the bootstrap data with the server token', {
      method: 'GET',
      url: `${joinServer}/api/v1/namespaces/kube-system/secrets/${BOOTSTRAP_SECRET}`,
      token: password,
      caPem,
    })) as { data: Record<string, string> };
    const field = (name: string): string => Buffer.from(secret.data[name] ?? '', 'base64').toString('utf8');
    if (field('cluster-init') !== 'true') {
      log('the first server does not run embedded etcd (cluster-init): servers cannot join it');
      return 1;
    }
    // The cluster's CA and admin credential, where this server's API server reads its own.
    await writeAtomically(join(dataDir, 'ca.crt'), field('ca.crt'), 0o644);
    await writeAtomically(join(dataDir, 'ca.key'), field('ca.key'), 0o600);
    await writeAtomically(join(dataDir, 'admin-token'), `${field('admin-token')}\n`, 0o600);
  }
  const etcd = await startEmbeddedEtcd({
    serverDir: K3S_SERVER_DIR,
    nodeName,
    address,
    join: `http://${new URL(joinServer).hostname}:${ETCD_CLIENT_PORT}`,
    log,
  });
  const { runCli } = await import('../sim-apiserver/cli.js');
  const serving = runCli([
    ...(await apiServerArgs(address, password, config)),
    '--etcd-endpoint',
    etcd.clientUrl,
    '--internal-port',
    String(SIM_K3S_INTERNAL_PORT),
  ]);
  await waitForApiServer();
  const caPem = await readFile(join(dataDir, 'ca.crt'), 'utf8');
  const adminToken = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim();
  const own = `https://${address}:${SIM_K3S_PORT}`;
  await writeAtomically(join(K3S_SERVER_DIR, 'tls', 'server-ca.crt'), caPem, 0o644);
  await writeAtomically(join(K3S_SERVER_DIR, 'token'), `${tokenText.trim()}\n`, 0o600);
  await writeAtomically(join(K3S_SERVER_DIR, 'node-token'), `${tokenText.trim()}\n`, 0o600);
  const adminKubeconfig = dumpYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'default',
        cluster: {
          server: `https://127.0.0.1:${SIM_K3S_PORT}`,
          'certificate-authority-data': Buffer.from(caPem).toString('base64'),
        },
      },
    ],
    users: [{ name: 'default', user: { token: adminToken } }],
    contexts: [{ name: 'default', context: { cluster: 'default', user: 'default' } }],
    'current-context': 'default',
  });
  await writeAtomically(K3S_ADMIN_KUBECONFIG, adminKubeconfig, 0o600);
  await writeAtomically(
    join(K3S_AGENT_DIR, 'kubelet.kubeconfig'),
    serverKubeletKubeconfig(own, caPem, adminToken),
    0o600,
  );
  const labels = {
    'node-role.kubernetes.io/control-plane': 'true',
    'node-role.kubernetes.io/master': 'true',
    'node-role.kubernetes.io/etcd': 'true',
    ...labelsOf(config),
  };
  await registerNodeRetrying({ server: own, token: adminToken, caPem, name: nodeName, version: VERSION, labels });
  log(`server ${nodeName} joined ${joinServer}; serving at ${own} (its own etcd member; the API on etcd)`);
  void keepReady({ server: own, token: adminToken, caPem, name: nodeName, version: VERSION }, log);
  return thenStop(serving, etcd);
}

/**
 * The cluster CA bundle as k3s's agent gets it (k3s pkg/clientaccess/token.go,
 * `getCACerts`): `GET /cacerts` without TLS verification and without
 * credentials, then the same request again verified with the bundle it
 * returned. The bytes are returned as served; the caller hashes them.
 */
async function fetchCaCerts(server: string): Promise<string> {
  for (;;) {
    try {
      return await fetchCaCertsOnce(server);
    } catch (error) {
      // k3s's words for an agent (pkg/agent/run.go, createProxyAndValidateToken, which retries every 2 s for ever).
      log(`Failed to validate connection to cluster at ${server}: ${(error as Error).message}`);
      await sleep(RETRY_INTERVAL_MS);
    }
  }
}

/** One `/cacerts` fetch as {@link fetchCaCerts} makes it; throws when the server does not answer. */
async function fetchCaCertsOnce(server: string): Promise<string> {
  const url = new URL('/cacerts', server).toString();
  const insecure = await call({ method: 'GET', url });
  if (insecure.status !== 200) throw new Error(`failed to get CA certs: ${url}: HTTP ${insecure.status}`);
  const verified = await call({ method: 'GET', url, caPem: insecure.body });
  if (verified.status !== 200) throw new Error(`CA cert validation failed: ${url}: HTTP ${verified.status}`);
  return insecure.body;
}

/**
 * k3s's `hashCA` for a bundle of one certificate: SHA-256 of the bytes as
 * served, so a trailing newline or another encoding changes it. k3s hashes
 * a bundle of several certificates differently (the DER of the root the
 * first chains to); the simulation's server serves one certificate, and a
 * bundle of several is refused here rather than guessed at.
 */
function k3sHashCa(bundle: string): string {
  const certificates = bundle.match(/-----BEGIN CERTIFICATE-----/g) ?? [];
  if (certificates.length !== 1) {
    throw new Error(`the simulation hashes a CA bundle of exactly one certificate, got ${certificates.length}`);
  }
  return createHash('sha256').update(bundle).digest('hex');
}

/** The node password k3s's agent makes once and sends with its node-named requests (k3s pkg/agent/config). */
export const K3S_NODE_PASSWORD_FILE = '/etc/rancher/node/password';

/** One certificate and its key, split from a supervisor answer as k3s's `splitCertKeyPEM` splits it. */
function splitCertKey(pem: string): { certPem: string; keyPem: string } {
  const blocks = pem.match(/-----BEGIN [A-Z ]+-----[\s\S]*?-----END [A-Z ]+-----\n?/g) ?? [];
  const keyPem = blocks.filter((block) => block.includes('PRIVATE KEY')).join('');
  const certPem = blocks.filter((block) => !block.includes('PRIVATE KEY')).join('');
  if (certPem === '' || keyPem === '') throw new Error('the supervisor sent no certificate and key');
  return { certPem, keyPem };
}

/** The node password, made on first use (16 random bytes, hex, mode 0600) and read from then on. */
async function ensureNodePassword(): Promise<string> {
  if (existsSync(K3S_NODE_PASSWORD_FILE)) return (await readFile(K3S_NODE_PASSWORD_FILE, 'utf8')).trim();
  const password = randomBytes(16).toString('hex');
  await writeAtomically(K3S_NODE_PASSWORD_FILE, `${password}\n`, 0o600);
  return password;
}

/** What the agent's kubelet and its other parts start with, from the supervisor. */
interface AgentConfiguration {
  caPem: string;
  kubeletCertPem: string;
  kubeletKeyPem: string;
}

/**
 * One attempt at what k3s's agent asks its supervisor at every start,
 * before its kubelet runs, in k3s's order (pkg/agent/config/config.go,
 * `get`; the routes: pkg/server/handlers/router.go):
 *
 * 1. `/cacerts`, unverified then verified, and the token's CA hash
 *    (`clientaccess.ParseAndValidateToken`);
 * 2. `/v1-k3s/config`;
 * 3. `/v1-k3s/client-ca.crt`, `/v1-k3s/server-ca.crt`;
 * 4. `/v1-k3s/serving-kubelet.crt`, then `/v1-k3s/client-kubelet.crt`,
 *    node-named: with `k3s-Node-Name`, `k3s-Node-Password` (the password
 *    file, made once) and `k3s-Node-IP`; on a 401 with a client
 *    certificate, asked again without it (k3s's `getNodeNamedCrt`);
 * 5. `/v1-k3s/client-kube-proxy.crt`, `/v1-k3s/client-k3s-controller.crt`.
 *
 * Every request carries the token (a bootstrap token as `Bearer`) and, once
 * the agent has one, its kubelet client certificate
 * (`clientaccess.WithClientCertificate`): after the first start the
 * supervisor sees the node's own identity, which outlives the join token.
 * Each answer is written where k3s writes it. Any failure fails the attempt.
 */
async function retrieveAgentConfiguration(options: {
  server: string;
  token: string;
  caHash: string;
  nodeName: string;
  nodeIp: string;
}): Promise<AgentConfiguration> {
  const caPem = await fetchCaCertsOnce(options.server);
  const actual = k3sHashCa(caPem);
  if (actual !== options.caHash) {
    throw new Error(`token CA hash does not match the Cluster CA certificate hash: ${options.caHash} != ${actual}`);
  }
  const clientCertFile = join(K3S_AGENT_DIR, 'client-kubelet.crt');
  const clientKeyFile = join(K3S_AGENT_DIR, 'client-kubelet.key');
  const own = async (): Promise<{ certPem: string; keyPem: string } | undefined> =>
    existsSync(clientCertFile) && existsSync(clientKeyFile)
      ? { certPem: await readFile(clientCertFile, 'utf8'), keyPem: await readFile(clientKeyFile, 'utf8') }
      : undefined;
  const get = async (path: string, nodeHeaders?: Record<string, string>): Promise<string> => {
    const url = new URL(path, options.server).toString();
    const ask = (identity: { certPem: string; keyPem: string } | undefined) =>
      call({
        method: 'GET',
        url,
        caPem,
        token: options.token,
        ...identity,
        ...(nodeHeaders ? { headers: nodeHeaders } : {}),
      });
    const identity = await own();
    let answer = await ask(identity);
    if (answer.status === 401 && identity && nodeHeaders) answer = await ask(undefined);
    if (answer.status === 403 && nodeHeaders) {
      throw new Error(
        `Node password rejected, duplicate hostname or contents of '${K3S_NODE_PASSWORD_FILE}' may not match server node-passwd entry`,
      );
    }
    if (answer.status !== 200) throw new Error(`${url}: HTTP ${answer.status}`);
    return answer.body;
  };
  await get('/v1-k3s/config');
  await writeAtomically(join(K3S_AGENT_DIR, 'client-ca.crt'), await get('/v1-k3s/client-ca.crt'), 0o600);
  await writeAtomically(join(K3S_AGENT_DIR, 'server-ca.crt'), await get('/v1-k3s/server-ca.crt'), 0o600);
  const nodeHeaders = {
    'k3s-Node-Name': options.nodeName,
    'k3s-Node-Password': await ensureNodePassword(),
    'k3s-Node-IP': options.nodeIp,
  };
  const serving = splitCertKey(await get('/v1-k3s/serving-kubelet.crt', nodeHeaders));
  await writeAtomically(join(K3S_AGENT_DIR, 'serving-kubelet.crt'), serving.certPem, 0o600);
  await writeAtomically(join(K3S_AGENT_DIR, 'serving-kubelet.key'), serving.keyPem, 0o600);
  const kubelet = splitCertKey(await get('/v1-k3s/client-kubelet.crt', nodeHeaders));
  await writeAtomically(clientCertFile, kubelet.certPem, 0o600);
  await writeAtomically(clientKeyFile, kubelet.keyPem, 0o600);
  for (const name of ['client-kube-proxy', 'client-k3s-controller']) {
    const issued = splitCertKey(await get(`/v1-k3s/${name}.crt`));
    await writeAtomically(join(K3S_AGENT_DIR, `${name}.crt`), issued.certPem, 0o600);
    await writeAtomically(join(K3S_AGENT_DIR, `${name}.key`), issued.keyPem, 0o600);
  }
  return { caPem, kubeletCertPem: kubelet.certPem, kubeletKeyPem: kubelet.keyPem };
}

/**
 * k3s's agent tunnel, as `tunnel.Setup` opens it before the kubelet starts
 * (k3s pkg/agent/tunnel/tunnel.go): a websocket to `/v1-k3s/connect` on the
 * supervisor, with the node's kubelet client certificate and the server CA
 * the agent wrote, retried every second until it connects ("Remotedialer
 * connected to proxy"); the agent starts its kubelet only then. A dropped
 * tunnel is opened again in the background.
 */
async function connectTunnel(server: string, caPem: string, cert: { certPem: string; keyPem: string }): Promise<void> {
  const url = new URL('/v1-k3s/connect', server);
  const open = (): Promise<Duplex> =>
    new Promise((resolve, reject) => {
      const req = httpsRequest(url, {
        ca: caPem,
        cert: cert.certPem,
        key: cert.keyPem,
        headers: {
          Connection: 'Upgrade',
          Upgrade: 'websocket',
          'Sec-WebSocket-Version': '13',
          'Sec-WebSocket-Key': randomBytes(16).toString('base64'),
        },
        timeout: RETRY_INTERVAL_MS * 10,
      });
      req.on('upgrade', (_res, socket: Duplex) => resolve(socket));
      req.on('response', (res) => {
        res.resume();
        reject(new Error(`${url}: HTTP ${res.statusCode ?? 0}`));
      });
      req.on('timeout', () => req.destroy(new Error(`${url}: timed out`)));
      req.on('error', reject);
      req.end();
    });
  for (;;) {
    try {
      const socket = await open();
      log(`Remotedialer connected to proxy ${url}`);
      socket.on('error', () => socket.destroy());
      socket.on('close', () => void connectTunnel(server, caPem, cert).catch(() => {}));
      return;
    } catch (error) {
      log(`Remotedialer proxy error; reconnecting...: ${(error as Error).message}`);
      await sleep(RETRY_INTERVAL_MS);
    }
  }
}

/** k3s's `util.DefaultAPIServerReadyTimeout` (pkg/util/api.go): 15 minutes, or as a test shortened it. */
const API_SERVER_READY_TIMEOUT_MS = 15 * 60_000;
/** How often k3s's config.APIServers asks again for an empty list (pkg/agent/config/config.go). */
const APISERVERS_RETRY_MS = 5_000;

/**
 * k3s's `APIServers` (pkg/agent/config/config.go), asked by `tunnel.Setup`
 * before the tunnel: `/v1-k3s/apiservers` on the supervisor, a JSON list
 * of `host:port`; an empty list is asked again every 5 s, an error ends
 * the poll with no addresses (so it does not hold the agent). The agent's
 * load balancer then dials these addresses (and its configured server
 * only when none answers), and opens a tunnel to each of them.
 */
async function askApiServers(server: string, caPem: string, token: string): Promise<string[]> {
  for (;;) {
    let answer;
    try {
      answer = await call({ method: 'GET', url: new URL('/v1-k3s/apiservers', server).toString(), caPem, token });
    } catch (error) {
      log(`Failed to retrieve list of apiservers from server: ${(error as Error).message}`);
      return [];
    }
    if (answer.status !== 200) {
      log(`Failed to retrieve list of apiservers from server: HTTP ${answer.status}`);
      return [];
    }
    const addresses = (JSON.parse(answer.body) as unknown[]).map(String);
    if (addresses.length > 0) {
      log(`Got apiserver addresses from supervisor: [${addresses.join(' ')}]`);
      return addresses;
    }
    await sleep(APISERVERS_RETRY_MS);
  }
}

/**
 * The goroutine k3s's `tunnel.Setup` starts beside the tunnel
 * (pkg/agent/tunnel/tunnel.go): `/readyz` through the agent's own kubelet
 * kubeconfig (its load balancer: the supervisor addresses, then the
 * configured server), retried until it answers 200; when it does not within
 * `DefaultAPIServerReadyTimeout`, the whole agent ends (`logrus.Fatalf`).
 */
async function waitForApiServerReady(
  targets: readonly string[],
  caPem: string,
  cert: { certPem: string; keyPem: string },
): Promise<void> {
  const timeoutMs = readSimTiming().agentApiServerReadyTimeoutMs ?? API_SERVER_READY_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const target of targets) {
      try {
        const answer = await call({ method: 'GET', url: new URL('/readyz', target).toString(), caPem, ...cert });
        if (answer.status === 200) {
          log(`apiserver ready: ${target}/readyz answered ok`);
          return;
        }
      } catch {
        // The load balancer tries the next server.
      }
    }
    if (Date.now() > deadline) {
      // k3s's words (tunnel.go); the agent process ends and its service manager restarts it.
      log(`Tunnel watches failed to wait for apiserver ready: timed out after ${timeoutMs} ms`);
      process.exit(1);
    }
    await sleep(RETRY_INTERVAL_MS);
  }
}

function parseK10(token: string): { caHash: string; credentials: string } {
  const match = /^K10([0-9a-f]{64})::(.+)$/.exec(token.trim());
  if (!match) throw new Error('the token is not a full K10<ca hash>::<credentials> token');
  return { caHash: match[1]!, credentials: match[2]! };
}

async function runAgent(configPath: string): Promise<number> {
  const config = await readConfig(configPath);
  const server = stringOf(config, 'server');
  const tokenText = stringOf(config, 'token');
  if (!server || !tokenText) {
    log(`${configPath} must set server and token`);
    return 1;
  }
  const { caHash, credentials } = parseK10(tokenText);
  const nodeName = stringOf(config, 'node-name') ?? hostname();
  const caPem = await fetchCaCerts(server);
  const actual = k3sHashCa(caPem);
  if (actual !== caHash) {
    // k3s's words (pkg/clientaccess/token.go, validateCAHash).
    log(`token CA hash does not match the Cluster CA certificate hash: ${caHash} != ${actual}`);
    return 1;
  }
  // k3s's config.Get: the whole start-up exchange, retried until it succeeds, before the kubelet runs.
  let agentConfiguration: AgentConfiguration;
  for (;;) {
    try {
      agentConfiguration = await retrieveAgentConfiguration({
        server,
        token: credentials,
        caHash,
        nodeName,
        nodeIp: stringOf(config, 'node-ip') ?? '',
      });
      break;
    } catch (error) {
      // k3s's words (pkg/agent/config/config.go, Get).
      log(`Waiting to retrieve agent configuration; server is not ready: ${(error as Error).message}`);
      await sleep(RETRY_INTERVAL_MS);
    }
  }
  const certificate = { certPem: agentConfiguration.kubeletCertPem, keyPem: agentConfiguration.kubeletKeyPem };
  const serverCaPem = await readFile(join(K3S_AGENT_DIR, 'server-ca.crt'), 'utf8');
  // k3s's tunnel.Setup, before the kubelet: the supervisor addresses, the /readyz wait beside, and the
  // tunnel to every supervisor address, which must connect first.
  const supervisors = (await askApiServers(server, agentConfiguration.caPem, credentials)).map(
    (address) => `https://${address}`,
  );
  const loadBalancer = [...supervisors, server];
  void waitForApiServerReady(loadBalancer, serverCaPem, certificate);
  await Promise.all(
    (supervisors.length > 0 ? supervisors : [server]).map((address) =>
      connectTunnel(address, serverCaPem, certificate),
    ),
  );
  const clientCert = join(K3S_AGENT_DIR, 'client-kubelet.crt');
  const clientKey = join(K3S_AGENT_DIR, 'client-kubelet.key');
  const kubeletKubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'local', cluster: { server, 'certificate-authority': join(K3S_AGENT_DIR, 'server-ca.crt') } }],
    users: [{ name: 'kubelet', user: { 'client-certificate': clientCert, 'client-key': clientKey } }],
    contexts: [{ name: 'local', context: { cluster: 'local', user: 'kubelet' } }],
    'current-context': 'local',
  };
  await writeAtomically(join(K3S_AGENT_DIR, 'kubelet.kubeconfig'), dumpYaml(kubeletKubeconfig), 0o600);
  // Like k3s, a kubeconfig given with kubelet-arg replaces the one the agent wrote for its kubelet.
  const kubeletKubeconfigArg = kubeletArgsOf(config).get('kubeconfig');
  const kubelet = kubeletKubeconfigArg
    ? await kubeletConnection(kubeletKubeconfigArg)
    : { server, caPem, certPem: certificate.certPem, keyPem: certificate.keyPem };
  if (kubeletKubeconfigArg) log(`kubelet uses ${kubeletKubeconfigArg}: ${kubelet.server}`);
  let isStopping = false;
  // The kubelet's pod source starts beside registration, gated on its Node informer (../sim-kubelet-pods.ts).
  void runPodSource({ ...kubelet, name: nodeName, version: VERSION }, log, () => isStopping);
  for (;;) {
    try {
      await registerNode(
        {
          ...kubelet,
          name: nodeName,
          version: VERSION,
          labels: labelsOf(config),
          taints: taintsOf(config),
        },
        log,
      );
      break;
    } catch (error) {
      log(`registering Node ${nodeName}: ${(error as Error).message}`);
      await sleep(RETRY_INTERVAL_MS);
    }
  }
  log(`agent ${nodeName} registered with ${kubelet.server}`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
    void keepReady({ ...kubelet, name: nodeName, version: VERSION }, log);
  });
  isStopping = true;
  return 0;
}

/** Where k3s imports airgap image archives from at start (k3s pkg/agent/containerd preloads agent/images). */
export const K3S_AGENT_IMAGES_DIR = join(K3S_AGENT_DIR, 'images');
/**
 * What the simulation "imported", one JSON line per archive and start
 * (`{"file","sha256","size"}`): the record tests read, since there is no
 * containerd to ask. Outside images/, so k3s would not try to import it.
 */
export const SIM_IMPORTED_IMAGES_LOG = join(K3S_AGENT_DIR, 'sim-imported-images.jsonl');
/** The archive endings k3s imports, and the leading bytes each format starts with. */
const IMAGE_FORMATS: ReadonlyArray<{ suffix: string; magic: (head: Buffer) => boolean }> = [
  { suffix: '.tar.gz', magic: (head) => head[0] === 0x1f && head[1] === 0x8b },
  { suffix: '.tar.zst', magic: (head) => head.readUInt32LE(0) === 0xfd2fb528 },
  { suffix: '.tar', magic: (head) => head.subarray(257, 262).toString('latin1') === 'ustar' },
];

/**
 * The preload k3s's agent runs before its kubelet (k3s
 * pkg/agent/containerd): every regular file of agent/images whose name k3s
 * supports is imported into containerd; other names are skipped; an archive
 * that fails to import is logged and the start goes on. The simulation
 * cannot import anything, so it checks each archive's format by its first
 * bytes (what a real import would fail on first) and records the ones that
 * pass with their SHA-256, hashed as a stream.
 */
async function preloadAirgapImages(): Promise<void> {
  if (!existsSync(K3S_AGENT_IMAGES_DIR)) return;
  for (const dirent of await readdir(K3S_AGENT_IMAGES_DIR, { withFileTypes: true })) {
    if (!dirent.isFile()) continue;
    const format = IMAGE_FORMATS.find((candidate) => dirent.name.endsWith(candidate.suffix));
    if (format === undefined) {
      log(`skipping ${dirent.name} in ${K3S_AGENT_IMAGES_DIR}: not an image archive name k3s imports`);
      continue;
    }
    const path = join(K3S_AGENT_IMAGES_DIR, dirent.name);
    const handle = await open(path, 'r');
    const head = Buffer.alloc(512);
    try {
      await handle.read(head, 0, head.length, 0);
    } finally {
      await handle.close();
    }
    if (!format.magic(head)) {
      log(`error importing ${path}: not a ${format.suffix} archive`);
      continue;
    }
    const hash = createHash('sha256');
    let size = 0;
    for await (const chunk of createReadStream(path)) {
      hash.update(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
    const sha256 = hash.digest('hex');
    await appendFile(SIM_IMPORTED_IMAGES_LOG, `${JSON.stringify({ file: dirent.name, sha256, size })}\n`);
    log(`imported images from ${path} (sha256 ${sha256})`);
  }
}

/** `k3s server | agent | --version`, as the simulation understands them. */
export async function runSimK3s(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const configIndex = rest.indexOf('--config');
  const configPath = configIndex >= 0 ? (rest[configIndex + 1] ?? K3S_CONFIG_PATH) : K3S_CONFIG_PATH;
  if (command === '--version' || command === '-v' || command === 'version') {
    process.stdout.write(`k3s version ${VERSION} (SIMULATED k3s for edgeadm tests, not k3s)\n`);
    return 0;
  }
  try {
    if (command === 'server' || command === 'agent') await preloadAirgapImages();
    if (command === 'server') return await runServer(configPath);
    if (command === 'agent') return await runAgent(configPath);
  } catch (error) {
    log(`failed: ${(error as Error).stack ?? String(error)}`);
    return 1;
  }
  process.stderr.write('usage: k3s server|agent|--version  (SIMULATED k3s for edgeadm tests)\n');
  return 2;
}
