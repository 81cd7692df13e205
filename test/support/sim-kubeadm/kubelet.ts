/**
 * A SIMULATED kubelet — not the kubelet — for edgeadm's tests. edgeadm
 * installs and starts it from the kubelet unit, exactly as a real kubelet;
 * then, like a packaged kubelet waiting for kubeadm:
 *
 * 1. it waits for /var/lib/kubelet/config.yaml (a real kubelet exits and
 *    systemd restarts it every 10 s until kubeadm writes it) and for the
 *    container runtime's socket (`--container-runtime-endpoint` from
 *    kubeadm-flags.env), so the runtime phase has to have done its work;
 * 2. it "runs" the static pod /etc/kubernetes/manifests/kube-apiserver.yaml
 *    by starting the simulated API server (../sim-apiserver) in-process on
 *    the manifest's `--advertise-address` and `--secure-port`, with the CA
 *    kubeadm wrote in /etc/kubernetes/pki and its objects under
 *    /var/lib/etcd/sim-apiserver (where stacked etcd keeps a real cluster's);
 *    with `--etcd-servers` (an HA control plane's stacked etcd, which it runs
 *    from /etc/kubernetes/manifests/etcd.yaml first: ./etcd-pod.ts) the
 *    simulated API server keeps its objects in etcd, one instance leading
 *    (../sim-apiserver/README.md, "HA on etcd");
 *    on a control plane joining a cluster without stacked etcd (the manifest names the first API server in
 *    SHARED_STORE_ANNOTATION) it instead serves on its own address with a
 *    serving certificate from the downloaded CA and forwards every request
 *    to the first API server (the simulated cluster's one store): bearer
 *    tokens pass through, and a client certificate verified against the CA
 *    is forwarded as impersonation of its user and groups;
 * 3. without /etc/kubernetes/kubelet.conf but with bootstrap-kubelet.conf it
 *    performs TLS bootstrap as a kubelet does: a new key, a CSR for
 *    `system:node:<name>` in `system:nodes` (signer
 *    kubernetes.io/kube-apiserver-client-kubelet) posted with the bootstrap
 *    token, then the certificate once the (simulated) controller manager
 *    approved and signed it; kubelet-client-current.pem holds certificate
 *    and key, and kubelet.conf names it. The token is not used again;
 * 4. it talks to the API server named by its `--kubeconfig` (from its
 *    arguments, or from `KUBELET_KUBECONFIG_ARGS` in the unit's drop-ins as
 *    systemd would expand it; default kubelet.conf), so a drop-in that
 *    sends it through edgeadm's edge-proxy is honoured;
 * 5. it registers its Node (name from `--hostname-override`, labels from
 *    `--node-labels`, taints from `--register-with-taints`) and keeps it
 *    Ready with heartbeats until stopped, reporting its own binary's
 *    version (its package's, see simExecutableScript) as kubeletVersion;
 *    It keeps a mirror Pod `kube-system/kube-apiserver-<node>` (labels
 *    `component=kube-apiserver`, `tier=control-plane`, the manifest's image)
 *    for its static Pod, as the kubelet does, so that clients (kubeadm's
 *    version getter, edgeadm's upgrade plan) see which version each control
 *    plane's API server runs; and it runs the pods bound to its Node, read
 *    as the kubelet reads them (../sim-kubelet-pods.ts);
 * 6. the static API server reports the version its manifest's image names
 *    (`registry.k8s.io/kube-apiserver:v1.31.2` → `v1.31.2`), and when the
 *    manifest changes (`kubeadm upgrade apply|node` rewrites it) the kubelet
 *    stops that API server and starts it again from the new manifest, as
 *    the kubelet recreates a static Pod whose manifest changed.
 */
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer, request as forward, type RequestOptions } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { createClientCertificateRequest } from '../sim-apiserver/pki.js';
import { join } from 'node:path';
import { dump as dumpYaml, load as loadYaml } from 'js-yaml';
import {
  expectOk,
  keepReady,
  nodeRegistrationObjects,
  registerNode,
  simLogger,
  simReportedVersion,
  sleep,
  writeAtomically,
  type SimNodeOptions,
} from '../sim-node.js';
import { runPodSource } from '../sim-kubelet-pods.js';
import { simImportedImageRefs } from './containerd.js';
import { runEtcdStaticPod } from './etcd-pod.js';
import {
  APISERVER_MANIFEST,
  BOOTSTRAP_KUBELET_CONF,
  CRI_IMAGE_NAMESPACE,
  CA_CERT,
  CA_KEY,
  DEFAULT_CRI_SOCKET,
  ETCD_APISERVER_INTERNAL_PORT,
  ETCD_DIR,
  KUBELET_CONF,
  KUBELET_CONFIG,
  KUBELET_DIR,
  SANS_ANNOTATION,
  SHARED_STORE_ANNOTATION,
  SIM_KUBERNETES_VERSION,
  imageVersion,
  isSocketServing,
  kubeletKubeconfigArgOf,
  readKubeconfig,
  readKubeletFlags,
} from './layout.js';

const log = simLogger('sim-kubelet (SIMULATED kubelet for tests)');
/** This kubelet binary's version: its package's (see the module comment). */
const VERSION = simReportedVersion(SIM_KUBERNETES_VERSION);
/** How often the kubelet looks for the files kubeadm writes. */
const POLL_INTERVAL_MS = 500;
/** How long the static API server may take to serve. */
const API_START_TIMEOUT_MS = 60_000;
/** How long to wait between attempts while the API server is not reachable. */
const RETRY_INTERVAL_MS = 1_000;

/** How long a manifest change waits for the API server to stop before it stops etcd under it. */
const ETCD_STOP_WAIT_MS = 15_000;
/** Whether the static kube-apiserver runs now (etcd is stopped only after it). */
let isApiServerRunning = false;

async function waitFor(
  what: string,
  isThere: () => Promise<boolean> | boolean,
  timeoutMs = Number.POSITIVE_INFINITY,
): Promise<void> {
  let isLogged = false;
  const deadline = Date.now() + timeoutMs;
  while (!(await isThere()) && Date.now() < deadline) {
    if (!isLogged) log(`waiting for ${what}`);
    isLogged = true;
    await sleep(POLL_INTERVAL_MS);
  }
}

interface StaticPod {
  metadata?: { annotations?: Record<string, string> };
  spec?: { containers?: Array<{ command?: string[]; image?: string }> };
}

function argOf(command: string[], name: string): string | undefined {
  const prefix = `--${name}=`;
  return command.find((arg) => arg.startsWith(prefix))?.slice(prefix.length);
}

/**
 * Starts the simulated API server the static pod manifest describes; `serving`
 * resolves with its exit code once stopped (wrapped: an async function would
 * adopt a returned promise and wait for it).
 */
async function runStaticApiServer(stop: Promise<void>): Promise<{ serving: Promise<number> }> {
  const pod = loadYaml(await readFile(APISERVER_MANIFEST, 'utf8')) as StaticPod;
  const command = pod.spec?.containers?.[0]?.command ?? [];
  const version = imageVersion(pod.spec?.containers?.[0]?.image) ?? SIM_KUBERNETES_VERSION;
  const address = argOf(command, 'advertise-address') ?? '127.0.0.1';
  const port = argOf(command, 'secure-port') ?? '6443';
  const sans = (pod.metadata?.annotations?.[SANS_ANNOTATION] ?? '').split(',').filter(Boolean);
  const sharedStore = pod.metadata?.annotations?.[SHARED_STORE_ANNOTATION];
  if (sharedStore)
    return runForwardingApiServer({ address, port: Number(port), sans, upstream: sharedStore, stop, version });
  const dataDir = join(ETCD_DIR, 'sim-apiserver');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await copyFile(CA_CERT, join(dataDir, 'ca.crt'));
  await copyFile(CA_KEY, join(dataDir, 'ca.key'));
  const etcdServers = argOf(command, 'etcd-servers');
  if (etcdServers !== undefined) {
    // Every API server of the cluster the same admin token (the simulated API server's own; kube-apiserver has
    // none): derived from the cluster's CA key, which each control plane has.
    const caKey = await readFile(CA_KEY);
    const adminToken = createHash('sha256').update(caKey).update('sim-kubeadm admin token').digest('hex');
    await writeAtomically(join(dataDir, 'admin-token'), `${adminToken}\n`, 0o600);
  }
  const objectsFile = join(ETCD_DIR, 'sim-objects.yaml');
  // Node writes for nodes only (a stand-in for the Node authorizer): a bootstrap token gets none.
  const objects = [
    ...nodeRegistrationObjects('sim-kubeadm:node-registration', ['system:nodes']),
    ...mirrorPodObjects(),
  ];
  await writeAtomically(objectsFile, objects.map((o) => dumpYaml(o)).join('---\n'), 0o600);
  const { runCli } = await import('../sim-apiserver/cli.js');
  const serving = runCli(
    [
      '--listen',
      `${address}:${port}`,
      '--data-dir',
      dataDir,
      '--objects',
      objectsFile,
      '--version',
      version,
      // kube-controller-manager's csrapproving and csrsigning, for the kubelets' TLS bootstrap.
      '--csr-controllers',
      // kubeadm's kube-controller-manager (node lifecycle, taint eviction) and the default admission plugins.
      '--node-lifecycle',
      ...sans.flatMap((san) => ['--san', san]),
      // On stacked etcd (an HA control plane): the objects in etcd, one API server leading (../sim-apiserver).
      ...(etcdServers === undefined
        ? []
        : ['--etcd-endpoint', etcdServers, '--internal-port', String(ETCD_APISERVER_INTERNAL_PORT)]),
    ],
    { stop },
  );
  const deadline = Date.now() + API_START_TIMEOUT_MS;
  while (!existsSync(join(dataDir, 'ready'))) {
    if (Date.now() > deadline)
      throw new Error(`the static kube-apiserver did not serve within ${API_START_TIMEOUT_MS} ms`);
    await sleep(50);
  }
  log(`static pod kube-apiserver ${version} serving on ${address}:${port} (the simulated API server)`);
  return { serving };
}

/** What `/version` answers for `gitVersion` (the fields kubectl and clients read). */
export function versionInfo(gitVersion: string): Record<string, string> {
  const match = /^v(\d+)\.(\d+)/.exec(gitVersion);
  return { major: match?.[1] ?? '1', minor: match?.[2] ?? '0', gitVersion, platform: 'linux/amd64' };
}

function namesOf(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** A joining control plane's API server: forwards to the first one (see the module comment). */
async function runForwardingApiServer(options: {
  address: string;
  port: number;
  sans: string[];
  upstream: string;
  stop: Promise<void>;
  version: string;
}): Promise<{ serving: Promise<number> }> {
  const { SimCertificateAuthority } = await import('../sim-apiserver/pki.js');
  const caPem = await readFile(CA_CERT, 'utf8');
  const ca = await SimCertificateAuthority.load(caPem, await readFile(CA_KEY, 'utf8'));
  const serving = await ca.issueServing([options.address, '127.0.0.1', 'localhost', ...options.sans]);
  // Signed by the downloaded CA key: the first API server accepts it only if the download was right.
  const forwarder = await ca.issueClient({ user: 'sim-kubeadm:apiserver-forwarder', groups: ['system:masters'] });
  const upstream = new URL(options.upstream);
  const server = createServer(
    { cert: serving.certPem, key: serving.keyPem, ca: caPem, requestCert: true, rejectUnauthorized: false },
    (req, res) => {
      if (req.method === 'GET' && (req.url === '/version' || req.url === '/version/')) {
        // This instance's own version (its image's), as each kube-apiserver of an HA control plane answers.
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(versionInfo(options.version)));
        return;
      }
      const socket = req.socket as TLSSocket;
      const peer = socket.getPeerCertificate();
      const hasCertificate = peer !== null && Object.keys(peer).length > 0;
      if (hasCertificate && !socket.authorized) {
        res.writeHead(401, { 'Content-Type': 'application/json' });
        res.end('{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}');
        return;
      }
      const headers: Record<string, string | string[] | undefined> = { ...req.headers, host: upstream.host };
      for (const name of Object.keys(headers)) if (name.startsWith('impersonate-')) delete headers[name];
      const request: RequestOptions = {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers,
        ca: caPem,
        agent: false,
      };
      if (hasCertificate) {
        const subject = peer.subject as unknown as Record<string, string | string[] | undefined>;
        headers['impersonate-user'] = namesOf(subject.CN)[0] ?? '';
        headers['impersonate-group'] = namesOf(subject.O);
        request.cert = forwarder.certPem;
        request.key = forwarder.keyPem;
      }
      const out = forward(request, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      out.on('error', () => res.destroy());
      req.pipe(out);
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.address, () => resolve());
  });
  log(
    `static pod kube-apiserver serving on ${options.address}:${options.port}, forwarding to ${options.upstream} (the simulated cluster's one store)`,
  );
  const stopped = new Promise<number>((resolve) => {
    const stop = (): void => {
      server.closeAllConnections();
      server.close(() => resolve(0));
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    void options.stop.then(stop);
  });
  return { serving: stopped };
}

/** How often the mirror Pod is compared with the manifest. */
const MIRROR_SYNC_INTERVAL_MS = 1_000;

/**
 * The grant that stands in for the Node authorizer's rule on mirror Pods (a
 * node may create and delete the mirror Pods bound to it): here, any node
 * may write Pods.
 */
function mirrorPodObjects(): unknown[] {
  const name = 'sim-kubeadm:mirror-pods';
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:nodes' }],
    },
  ];
}

/** Keeps the mirror Pod of the static kube-apiserver in step with its manifest (see the module comment). */
async function keepMirrorPod(node: SimNodeOptions, isStopping: () => boolean): Promise<void> {
  let posted: string | undefined;
  while (!isStopping()) {
    const text = await readFile(APISERVER_MANIFEST, 'utf8').catch(() => undefined);
    const image = text === undefined ? undefined : (loadYaml(text) as StaticPod).spec?.containers?.[0]?.image;
    if (image !== undefined && image !== posted) {
      const name = `kube-apiserver-${node.name}`;
      try {
        await expectOk(`apply the mirror Pod ${name}`, {
          method: 'PATCH',
          url: `${node.server}/api/v1/namespaces/kube-system/pods/${name}?fieldManager=kubelet&force=true`,
          caPem: node.caPem,
          ...(node.token ? { token: node.token } : {}),
          ...(node.certPem ? { certPem: node.certPem } : {}),
          ...(node.keyPem ? { keyPem: node.keyPem } : {}),
          contentType: 'application/apply-patch+yaml',
          body: {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: {
              name,
              namespace: 'kube-system',
              labels: { component: 'kube-apiserver', tier: 'control-plane' },
              annotations: { 'kubernetes.io/config.mirror': createHash('sha256').update(text!).digest('hex') },
            },
            spec: { nodeName: node.name, hostNetwork: true, containers: [{ name: 'kube-apiserver', image }] },
          },
        });
        // The kubelet reports its static Pod's status as it runs (phase Running: the API server is up).
        await expectOk(`report the mirror Pod ${name} Running`, {
          method: 'PATCH',
          url: `${node.server}/api/v1/namespaces/kube-system/pods/${name}/status?fieldManager=kubelet&force=true`,
          caPem: node.caPem,
          ...(node.token ? { token: node.token } : {}),
          ...(node.certPem ? { certPem: node.certPem } : {}),
          ...(node.keyPem ? { keyPem: node.keyPem } : {}),
          contentType: 'application/apply-patch+yaml',
          body: {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name, namespace: 'kube-system' },
            status: { phase: 'Running' },
          },
        });
        posted = image;
      } catch (error) {
        log(`mirror Pod: ${(error as Error).message}`);
      }
    }
    await sleep(MIRROR_SYNC_INTERVAL_MS);
  }
}

/** The content of the manifest now (a hash), or undefined when there is none. */
async function manifestDigest(): Promise<string | undefined> {
  const text = await readFile(APISERVER_MANIFEST, 'utf8').catch(() => undefined);
  return text === undefined ? undefined : createHash('sha256').update(text).digest('hex');
}

/** The image the manifest names now, or undefined when there is none. */
async function manifestImage(): Promise<string | undefined> {
  const text = await readFile(APISERVER_MANIFEST, 'utf8').catch(() => undefined);
  return text === undefined ? undefined : (loadYaml(text) as StaticPod).spec?.containers?.[0]?.image;
}

/**
 * Runs the static kube-apiserver and keeps it matching its manifest: when
 * the manifest's content changes, the running one is stopped and a new one
 * started from the new manifest (a real kubelet recreates the Pod); a new
 * image must have been imported into containerd first (the kubelet cannot
 * pull it offline), else the Pod stays down. A
 * manifest that is removed stops it. `stopped` settles when the kubelet is
 * stopping and the API server has stopped.
 */
async function runStaticPod(isStopping: () => boolean): Promise<{ stopped: Promise<number> }> {
  let digest = await manifestDigest();
  let image = await manifestImage();
  let stopCurrent!: () => void;
  let current = await runStaticApiServer(new Promise<void>((resolve) => (stopCurrent = resolve)));
  isApiServerRunning = true;
  const stopped = (async (): Promise<number> => {
    for (;;) {
      await sleep(POLL_INTERVAL_MS);
      if (isStopping()) return current.serving;
      const now = await manifestDigest();
      if (now === digest) continue;
      log(`${APISERVER_MANIFEST} changed: recreating the static pod kube-apiserver`);
      stopCurrent();
      await current.serving;
      isApiServerRunning = false;
      digest = now;
      if (now === undefined) {
        // No manifest, no static Pod; wait for one to come back.
        while (!isStopping() && (await manifestDigest()) === undefined) await sleep(POLL_INTERVAL_MS);
        if (isStopping()) return 0;
        digest = await manifestDigest();
      }
      const next = await manifestImage();
      if (next !== image) {
        // A new image must be in containerd: the kubelet would pull it, and the test hosts have no route out.
        let isLogged = false;
        while (!isStopping() && next !== undefined && !simImportedImageRefs(CRI_IMAGE_NAMESPACE).has(next)) {
          if (!isLogged) {
            log(
              `static pod kube-apiserver: Failed to pull image "${next}": dial tcp: lookup registry.k8s.io: no such host (ImagePullBackOff; the host has no route out)`,
            );
          }
          isLogged = true;
          await sleep(POLL_INTERVAL_MS);
          if ((await manifestImage()) !== next) break;
        }
        if (isStopping()) return 0;
        if ((await manifestImage()) !== next) continue;
        image = next;
      }
      current = await runStaticApiServer(new Promise<void>((resolve) => (stopCurrent = resolve)));
      isApiServerRunning = true;
    }
  })();
  return { stopped };
}

/** Where the kubelet keeps its client certificate and key (one file, as the kubelet writes it). */
const KUBELET_CLIENT_PEM = join(KUBELET_DIR, 'pki', 'kubelet-client-current.pem');
/** How long the kubelet waits for its CSR to be signed. */
const CSR_WAIT_TIMEOUT_MS = 5 * 60_000;

/** The kubelet's TLS bootstrap (see the module comment). */
async function bootstrapKubeconfig(nodeName: string): Promise<void> {
  const bootstrap = await readKubeconfig(BOOTSTRAP_KUBELET_CONF);
  const { requestPem, keyPem } = await createClientCertificateRequest({
    user: `system:node:${nodeName}`,
    groups: ['system:nodes'],
  });
  const name = `node-csr-${randomBytes(8).toString('hex')}`;
  const url = `${bootstrap.server}/apis/certificates.k8s.io/v1/certificatesigningrequests`;
  const access = { caPem: bootstrap.caPem, ...(bootstrap.token ? { token: bootstrap.token } : {}) };
  await expectOk('create the kubelet client CSR', {
    ...access,
    method: 'POST',
    url,
    body: {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name },
      spec: {
        request: Buffer.from(requestPem).toString('base64'),
        signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
        usages: ['digital signature', 'client auth'],
      },
    },
  });
  log(`posted CSR ${name} for system:node:${nodeName}`);
  const deadline = Date.now() + CSR_WAIT_TIMEOUT_MS;
  let certificate: string | undefined;
  while (!certificate) {
    const csr = (await expectOk('read the kubelet client CSR', {
      ...access,
      method: 'GET',
      url: `${url}/${name}`,
    })) as {
      status?: { certificate?: string };
    };
    if (csr.status?.certificate) certificate = Buffer.from(csr.status.certificate, 'base64').toString('utf8');
    else if (Date.now() > deadline) throw new Error(`CSR ${name} was not approved and signed in time`);
    else await sleep(RETRY_INTERVAL_MS);
  }
  await writeAtomically(KUBELET_CLIENT_PEM, `${certificate.trimEnd()}\n${keyPem}`, 0o600);
  const kubeconfig = dumpYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'default-cluster',
        cluster: {
          server: bootstrap.server,
          'certificate-authority-data': Buffer.from(bootstrap.caPem).toString('base64'),
        },
      },
    ],
    users: [
      { name: 'default-auth', user: { 'client-certificate': KUBELET_CLIENT_PEM, 'client-key': KUBELET_CLIENT_PEM } },
    ],
    contexts: [{ name: 'default-context', context: { cluster: 'default-cluster', user: 'default-auth' } }],
    'current-context': 'default-context',
  });
  await writeAtomically(KUBELET_CONF, kubeconfig, 0o600);
  log(`wrote ${KUBELET_CONF} with the signed client certificate (${KUBELET_CLIENT_PEM})`);
}

/** `--name=value` or `--name value` in the kubelet's own arguments. */
function flagOf(argv: string[], name: string): string | undefined {
  const at = argv.indexOf(`--${name}`);
  if (at >= 0) return argv[at + 1];
  return argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
}

/**
 * `kubelet [flags…]` (only --kubeconfig is read, from the arguments or the
 * unit's drop-ins; the rest comes from the files kubeadm writes), `kubelet --version`.
 */
export async function runSimKubelet(argv: string[]): Promise<number> {
  if (argv.includes('--version')) {
    process.stdout.write(`Kubernetes ${VERSION} (SIMULATED kubelet for edgeadm tests)\n`);
    return 0;
  }
  let isStopping = false;
  const stopped = new Promise<void>((resolve) => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        isStopping = true;
        resolve();
      });
    }
  });
  try {
    await waitFor(`${KUBELET_CONFIG} (kubeadm writes it)`, () => existsSync(KUBELET_CONFIG) || isStopping);
    if (isStopping) return 0;
    const flags = await readKubeletFlags();
    const endpoint = flags['container-runtime-endpoint'] ?? DEFAULT_CRI_SOCKET;
    await waitFor(`the container runtime at ${endpoint}`, async () => isStopping || (await isSocketServing(endpoint)));
    // Stacked etcd first: the API server on it reads its objects there.
    const etcdPod = runEtcdStaticPod(
      () => isStopping,
      log,
      () => waitFor('the static pod kube-apiserver to stop before etcd', () => !isApiServerRunning, ETCD_STOP_WAIT_MS),
    );
    const staticPod = existsSync(APISERVER_MANIFEST) ? await runStaticPod(() => isStopping) : undefined;
    await waitFor(
      `${KUBELET_CONF} or ${BOOTSTRAP_KUBELET_CONF}`,
      () => existsSync(KUBELET_CONF) || existsSync(BOOTSTRAP_KUBELET_CONF),
    );
    if (!existsSync(KUBELET_CONF)) await bootstrapKubeconfig(flags['hostname-override'] ?? hostname());
    // Like the kubelet: --kubeconfig names what it talks to (edgeadm's edge drop-in names the edge-proxy's).
    const kubeconfig = flagOf(argv, 'kubeconfig') ?? (await kubeletKubeconfigArgOf('kubeconfig')) ?? KUBELET_CONF;
    const access = await readKubeconfig(kubeconfig);
    log(`using --kubeconfig ${kubeconfig}: ${access.server}`);
    const labels: Record<string, string> = {};
    for (const entry of (flags['node-labels'] ?? '').split(',').filter(Boolean)) {
      const [key, ...rest] = entry.split('=');
      if (key) labels[key] = rest.join('=');
    }
    const taints = (flags['register-with-taints'] ?? '')
      .split(',')
      .filter(Boolean)
      .map((entry) => {
        const [keyValue = '', effect = ''] = entry.split(':');
        const [key = '', ...value] = keyValue.split('=');
        return { key, ...(value.length > 0 ? { value: value.join('=') } : {}), effect };
      });
    const node: SimNodeOptions = {
      server: access.server,
      caPem: access.caPem,
      name: flags['hostname-override'] ?? hostname(),
      version: VERSION,
      ...(access.token ? { token: access.token } : {}),
      ...(access.certPem ? { certPem: access.certPem } : {}),
      ...(access.keyPem ? { keyPem: access.keyPem } : {}),
    };
    // The pod source starts beside registration, gated on the Node informer (../sim-kubelet-pods.ts).
    void runPodSource(node, log, () => isStopping);
    while (!isStopping) {
      try {
        await registerNode({ ...node, labels, taints }, log);
        log(`Node ${node.name} registered with ${node.server}`);
        break;
      } catch (error) {
        log(`registering Node ${node.name}: ${(error as Error).message}`);
        await sleep(RETRY_INTERVAL_MS);
      }
    }
    void keepReady(node, log);
    if (staticPod) void keepMirrorPod(node, () => isStopping);
    await stopped;
    // The static API server stops on the same signal; etcd once it has (it writes its last changes there).
    const code = staticPod ? await staticPod.stopped : 0;
    await etcdPod.stopNow();
    return code;
  } catch (error) {
    log(`failed: ${(error as Error).stack ?? String(error)}`);
    return 1;
  }
}
