/**
 * A SIMULATED kubeadm — not kubeadm — for edgeadm's tests. edgeadm's kubeadm
 * driver writes its configuration and runs `kubeadm init --config …`,
 * `kubeadm join --config …` and `kubeadm reset -f` on the host; this
 * stand-in does, in the same files, what those do:
 *
 * - `init`: reads the v1beta4 InitConfiguration and ClusterConfiguration
 *   (anything else is refused, as kubeadm refuses it); preflight (the
 *   container runtime's socket answers, no earlier control plane is there);
 *   certs (/etc/kubernetes/pki/ca.crt and ca.key); kubeconfigs (admin.conf,
 *   kubelet.conf, controller-manager.conf, scheduler.conf with client
 *   certificates); the kube-apiserver static pod manifest; the kubelet's
 *   config.yaml and kubeadm-flags.env; waits for the API server (the
 *   simulated kubelet runs it); uploads kube-system/kubeadm-config; marks
 *   the control plane (label and taint); the bootstrap-token phase (a
 *   default token, its RBAC, cluster-info without signatures). Phases named
 *   in `skipPhases` are skipped as kubeadm skips them (a parent name skips
 *   its children); addons (CoreDNS, kube-proxy) are not simulated. With
 *   `--upload-certs` it uploads the certificates (./certs-upload.ts) with
 *   InitConfiguration.certificateKey (or a new key, printed unless
 *   `--skip-certificate-key-print`).
 * - `init phase upload-certs --upload-certs --config FILE`: that upload alone.
 * - `join`: reads the v1beta4 JoinConfiguration; preflight; token discovery
 *   against cluster-info (JWS signature and CA pin checked independently of
 *   edgeadm's code); writes the CA, bootstrap-kubelet.conf and the kubelet's
 *   files, then waits for the kubelet to write kubelet.conf. With
 *   `controlPlane` (another control plane): refuses a cluster without a
 *   controlPlaneEndpoint (kubeadm-config), downloads and decrypts
 *   kubeadm-certs with `controlPlane.certificateKey` (a wrong key fails as
 *   kubeadm fails, before anything else is written), issues admin.conf,
 *   controller-manager.conf and scheduler.conf with the downloaded CA,
 *   writes the kube-apiserver manifest for `controlPlane.localAPIEndpoint`,
 *   waits for that API server and marks the control plane.
 * - `upgrade plan|apply|node`: see ./upgrade.ts.
 * - `version`: this binary's version (its package's, see simExecutableScript).
 * - `reset -f`: on a control plane with stacked etcd, removes its member
 *   from the etcd cluster first; empties /etc/kubernetes/manifests,
 *   /etc/kubernetes/pki, /var/lib/kubelet and /var/lib/etcd and removes the
 *   kubeconfigs.
 * - `init phase upload-certs` (an HA control plane) puts the first control
 *   plane on stacked etcd
 *   and a joining control plane adds its member (./stacked-etcd.ts,
 *   README.md "HA on etcd").
 *
 * Differences on purpose: no systemd in the test hosts, so starting and
 * stopping the kubelet is left to edgeadm's service manager (real kubeadm
 * prints the same warning without systemd); admin.conf's user is in
 * system:masters; no controller-manager or scheduler run, and etcd only for
 * an HA control plane; a control plane joining a cluster without stacked
 * etcd gets an API server that forwards to the first one's (see
 * SHARED_STORE_ANNOTATION in layout.ts).
 */
import { createHash, createHmac, randomBytes, X509Certificate } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { dump as dumpYaml, load as loadYaml, loadAll as loadAllYaml } from 'js-yaml';
import { SimCertificateAuthority } from '../sim-apiserver/pki.js';
import { call, expectOk, simLogger, simReportedVersion, sleep, writeAtomically } from '../sim-node.js';
import { runUpgrade } from './upgrade.js';
import { NODE_BOOTSTRAP_GROUP, downloadCerts, uploadCerts } from './certs-upload.js';
import {
  addStackedMember,
  etcdClientUrl,
  etcdManifest,
  etcdPeerUrl,
  ETCD_CLIENT_PORT,
  removeStackedMember,
} from './stacked-etcd.js';
import {
  ADMIN_CONF,
  APISERVER_MANIFEST,
  BOOTSTRAP_KUBELET_CONF,
  CA_CERT,
  CA_KEY,
  CONTROLLER_MANAGER_CONF,
  DEFAULT_CRI_SOCKET,
  ETCD_DIR,
  ETCD_MANIFEST,
  KUBELET_CONF,
  KUBELET_CONFIG,
  KUBELET_DIR,
  KUBELET_FLAGS_ENV,
  MANIFESTS_DIR,
  PKI_DIR,
  SANS_ANNOTATION,
  SCHEDULER_CONF,
  SHARED_STORE_ANNOTATION,
  SIM_KUBERNETES_VERSION,
  KubeadmError,
  isSocketServing,
  readKubeconfig,
  renderKubeconfig,
  renderKubeletFlags,
  type KubeconfigAccess,
} from './layout.js';

const API_VERSION = 'kubeadm.k8s.io/v1beta4';
/** kubeadm's default wait for the control plane (v1beta4 timeouts.controlPlaneComponentHealthCheck). */
const CONTROL_PLANE_TIMEOUT_MS = 4 * 60_000;
/** kubeadm's default discovery and TLS bootstrap timeouts are 5 min; the simulation is quicker to give up. */
const DISCOVERY_TIMEOUT_MS = 2 * 60_000;
const TLS_BOOTSTRAP_TIMEOUT_MS = 4 * 60_000;
const POLL_INTERVAL_MS = 500;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the simulation walks parsed kubeadm YAML loosely
type Doc = Record<string, any>;

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

const log = simLogger('sim-kubeadm (SIMULATED kubeadm for tests)');

async function loadConfig(path: string, kinds: string[]): Promise<Record<string, Doc>> {
  if (!existsSync(path)) throw new KubeadmError(`unable to read config from "${path}": no such file`);
  const docs = (loadAllYaml(await readFile(path, 'utf8')) as Doc[]).filter(Boolean);
  const byKind: Record<string, Doc> = {};
  for (const doc of docs) {
    if (doc.apiVersion === 'kubelet.config.k8s.io/v1beta1') byKind[doc.kind] = doc;
    else if (doc.apiVersion !== API_VERSION) {
      throw new KubeadmError(`${path}: unsupported apiVersion "${doc.apiVersion}" for kind "${doc.kind}"`);
    } else byKind[doc.kind] = doc;
  }
  for (const kind of kinds) {
    if (!byKind[kind]) throw new KubeadmError(`${path}: no ${API_VERSION} ${kind} found`);
  }
  return byKind;
}

async function preflight(checks: Array<[string, () => Promise<boolean> | boolean, string]>): Promise<void> {
  say('[preflight] Running pre-flight checks (SIMULATED kubeadm)');
  const errors: string[] = [];
  for (const [name, isOk, message] of checks) if (!(await isOk())) errors.push(`\t[ERROR ${name}]: ${message}`);
  if (errors.length > 0) {
    throw new KubeadmError(`[preflight] Some fatal errors occurred:\n${errors.join('\n')}`);
  }
}

function criSocketOf(nodeRegistration: Doc | undefined): string {
  return (nodeRegistration?.criSocket as string | undefined) ?? DEFAULT_CRI_SOCKET;
}

function kubeletFlags(nodeRegistration: Doc | undefined): Record<string, string> {
  const flags: Record<string, string> = {
    'container-runtime-endpoint': criSocketOf(nodeRegistration),
    'hostname-override': (nodeRegistration?.name as string | undefined) ?? hostname(),
  };
  // As kubeadm join does: nodeRegistration.taints reach the kubelet as --register-with-taints.
  const taints = (nodeRegistration?.taints ?? []) as Array<{ key: string; value?: string; effect: string }>;
  if (taints.length > 0) {
    flags['register-with-taints'] = taints
      .map((taint) => `${taint.key}${taint.value === undefined ? '' : `=${taint.value}`}:${taint.effect}`)
      .join(',');
  }
  for (const arg of (nodeRegistration?.kubeletExtraArgs ?? []) as Array<{ name: string; value: string }>) {
    flags[arg.name] = arg.value;
  }
  return flags;
}

async function writeKubeletFiles(docs: Record<string, Doc>, nodeRegistration: Doc | undefined): Promise<void> {
  const kubelet = docs.KubeletConfiguration ?? {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    cgroupDriver: 'systemd',
  };
  await writeAtomically(KUBELET_CONFIG, dumpYaml(kubelet), 0o644);
  await writeAtomically(KUBELET_FLAGS_ENV, renderKubeletFlags(kubeletFlags(nodeRegistration)), 0o644);
  say(`[kubelet-start] Writing kubelet configuration to file "${KUBELET_CONFIG}"`);
  say(
    '[kubelet-start] WARNING: unable to start the kubelet service: no systemd on this host (SIMULATED kubeadm); make sure the kubelet runs',
  );
}

function leftovers(paths: string[]): () => boolean {
  return () => paths.every((path) => !existsSync(path));
}

async function issueKubeconfig(
  ca: SimCertificateAuthority,
  caPem: string,
  server: string,
  path: string,
  identity: { user: string; groups: string[] },
): Promise<void> {
  const client = await ca.issueClient(identity);
  await writeAtomically(
    path,
    renderKubeconfig({ server, caPem, certPem: client.certPem, keyPem: client.keyPem }, identity.user),
    0o600,
  );
  say(`[kubeconfig] Writing "${path}" kubeconfig file`);
}

async function waitForApi(access: KubeconfigAccess): Promise<void> {
  const deadline = Date.now() + CONTROL_PLANE_TIMEOUT_MS;
  say(`[wait-control-plane] Waiting for the API server at ${access.server} (run by the kubelet as a static pod)`);
  for (;;) {
    const response = await call({ ...access, method: 'GET', url: `${access.server}/readyz` }).catch(() => undefined);
    if (response?.status === 200) return;
    if (Date.now() > deadline)
      throw new KubeadmError('[wait-control-plane] the API server did not become ready in time');
    await sleep(POLL_INTERVAL_MS);
  }
}

/** The RBAC kubeadm's upload-config phase makes: joining nodes (bootstrap tokens) and nodes may read kubeadm-config. */
async function applyNodesKubeadmConfigRbac(admin: KubeconfigAccess): Promise<void> {
  const rbac = `${admin.server}/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system`;
  const name = 'kubeadm:nodes-kubeadm-config';
  for (const [kind, body] of [
    [
      'roles',
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name, namespace: 'kube-system' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: ['kubeadm-config'], verbs: ['get'] }],
      },
    ],
    [
      'rolebindings',
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name, namespace: 'kube-system' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects: [
          { kind: 'Group', name: NODE_BOOTSTRAP_GROUP },
          { kind: 'Group', name: 'system:nodes' },
        ],
      },
    ],
  ] as const) {
    await expectOk(`apply ${name}`, {
      ...admin,
      method: 'PATCH',
      url: `${rbac}/${kind}/${name}?fieldManager=kubeadm&force=true`,
      contentType: 'application/apply-patch+yaml',
      body,
    });
  }
}

/** The certificate key of an upload: InitConfiguration.certificateKey, else a new one (printed unless asked not to). */
function certificateKeyOf(initConfig: Doc, argv: string[]): string {
  const given = initConfig.certificateKey as string | undefined;
  if (given) return given;
  const key = randomBytes(32).toString('hex');
  if (!argv.includes('--skip-certificate-key-print')) say(`[upload-certs] Using certificate key:\n${key}`);
  return key;
}

/**
 * Puts this (first) control plane on stacked etcd (README.md, "HA on
 * etcd"): real kubeadm's `init` always writes the etcd manifest; the
 * simulation writes it when the control plane's certificates are uploaded
 * for others to join (nothing in `init`'s configuration tells an HA control
 * plane from a single one), so that single control planes keep the quicker
 * store of their own. The etcd manifest of a cluster of one, the
 * kube-apiserver manifest with `--etcd-servers` (the kubelet starts etcd and
 * recreates the API server, which takes the objects it had into etcd), and
 * ClusterConfiguration.etcd.local in kubeadm-config (kubeadm's defaulting),
 * which a joining control plane reads to join etcd.
 */
async function stackOnEtcd(initConfig: Doc): Promise<void> {
  const apiServerText = await readFile(APISERVER_MANIFEST, 'utf8');
  const pod = loadYaml(apiServerText) as Doc;
  const command = (pod.spec?.containers?.[0]?.command ?? []) as string[];
  const address = command.find((c) => c.startsWith('--advertise-address='))?.slice('--advertise-address='.length);
  if (address === undefined) throw new KubeadmError(`${APISERVER_MANIFEST} has no --advertise-address`);
  const nodeName = (initConfig.nodeRegistration?.name as string | undefined) ?? hostname();
  const etcd = etcdManifest({
    nodeName,
    address,
    dataDir: ETCD_DIR,
    initialCluster: `${nodeName}=${etcdPeerUrl(address)}`,
    state: 'new',
  });
  await writeAtomically(ETCD_MANIFEST, dumpYaml(etcd), 0o600);
  say(`[etcd] Creating static Pod manifest for local etcd in "${MANIFESTS_DIR}"`);
  command.push(`--etcd-servers=http://127.0.0.1:${ETCD_CLIENT_PORT}`);
  const written = Date.now();
  await writeAtomically(APISERVER_MANIFEST, dumpYaml(pod), 0o600);
  // The API server the kubelet recreated on etcd (its ready mark is newer than the manifest), then answering.
  const readyMark = join(ETCD_DIR, 'sim-apiserver', 'ready');
  const deadline = Date.now() + CONTROL_PLANE_TIMEOUT_MS;
  while (!existsSync(readyMark) || (await stat(readyMark)).mtimeMs < written) {
    if (Date.now() > deadline) throw new KubeadmError('[etcd] the API server did not come back on etcd in time');
    await sleep(POLL_INTERVAL_MS);
  }
  const admin = await readKubeconfig(ADMIN_CONF);
  await waitForApi(admin);
  const current = await call({
    ...admin,
    method: 'GET',
    url: `${admin.server}/api/v1/namespaces/kube-system/configmaps/kubeadm-config`,
  });
  const data = (JSON.parse(current.body) as { data?: Record<string, string> }).data ?? {};
  const cluster = (loadYaml(data.ClusterConfiguration ?? '') ?? {}) as Doc;
  cluster.etcd = { ...(cluster.etcd as Doc | undefined), local: { dataDir: ETCD_DIR, ...cluster.etcd?.local } };
  await expectOk('record stacked etcd in kubeadm-config', {
    ...admin,
    method: 'PATCH',
    url: `${admin.server}/api/v1/namespaces/kube-system/configmaps/kubeadm-config?fieldManager=kubeadm&force=true`,
    contentType: 'application/apply-patch+yaml',
    body: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'kubeadm-config', namespace: 'kube-system' },
      data: { ClusterConfiguration: dumpYaml(cluster) },
    },
  });
}

/** `kubeadm init phase upload-certs --upload-certs --config FILE`. */
async function uploadCertsPhase(configPath: string, argv: string[]): Promise<void> {
  if (!argv.includes('--upload-certs')) {
    say('[upload-certs] Skipping phase. Please see --upload-certs');
    return;
  }
  const docs = await loadConfig(configPath, ['InitConfiguration']);
  // The control plane becomes one that others join: on stacked etcd from now on (see stackOnEtcd).
  if (existsSync(APISERVER_MANIFEST) && !existsSync(ETCD_MANIFEST)) await stackOnEtcd(docs.InitConfiguration!);
  await uploadCerts(await readKubeconfig(ADMIN_CONF), certificateKeyOf(docs.InitConfiguration!, argv));
}

/**
 * The kube-apiserver static Pod manifest kubeadm writes: on a joining
 * control plane it names the first control plane whose store it shares.
 */
function apiServerManifest(input: {
  address: string;
  port: number | string;
  sans: string[];
  cluster: Doc;
  sharedStoreServer?: string;
  /** Stacked etcd's client URL (an HA control plane: stacked-etcd.ts). */
  etcdServers?: string;
}): Doc {
  const { address, port, sans, cluster, sharedStoreServer, etcdServers } = input;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'kube-apiserver',
      namespace: 'kube-system',
      annotations: {
        'kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint': `${address}:${port}`,
        [SANS_ANNOTATION]: [...new Set(sans)].join(','),
        ...(sharedStoreServer === undefined ? {} : { [SHARED_STORE_ANNOTATION]: sharedStoreServer }),
      },
    },
    spec: {
      hostNetwork: true,
      containers: [
        {
          name: 'kube-apiserver',
          image: `registry.k8s.io/kube-apiserver:${cluster.kubernetesVersion ?? SIM_KUBERNETES_VERSION}`,
          command: [
            'kube-apiserver',
            `--advertise-address=${address}`,
            `--secure-port=${port}`,
            `--client-ca-file=${CA_CERT}`,
            '--enable-bootstrap-token-auth=true',
            ...(etcdServers === undefined ? [] : [`--etcd-servers=${etcdServers}`]),
            ...(sharedStoreServer === undefined
              ? [`--service-cluster-ip-range=${cluster.networking?.serviceSubnet ?? '10.96.0.0/12'}`]
              : []),
          ],
        },
      ],
    },
  };
}

async function init(configPath: string, argv: string[]): Promise<void> {
  const docs = await loadConfig(configPath, ['InitConfiguration', 'ClusterConfiguration']);
  const initConfig = docs.InitConfiguration!;
  const cluster = docs.ClusterConfiguration!;
  const skip = new Set<string>((initConfig.skipPhases ?? []) as string[]);
  const nodeRegistration = initConfig.nodeRegistration as Doc | undefined;
  const nodeName = (nodeRegistration?.name as string | undefined) ?? hostname();
  const address = initConfig.localAPIEndpoint?.advertiseAddress as string | undefined;
  const port = (initConfig.localAPIEndpoint?.bindPort as number | undefined) ?? 6443;
  if (!address) throw new KubeadmError('localAPIEndpoint.advertiseAddress is required by this simulation');
  const endpoint = (cluster.controlPlaneEndpoint as string | undefined) ?? `${address}:${port}`;
  const server = `https://${endpoint}`;
  const cri = criSocketOf(nodeRegistration);
  await preflight([
    ['CRI', () => isSocketServing(cri), `container runtime is not running: ${cri} does not answer`],
    [
      'FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml',
      leftovers([APISERVER_MANIFEST]),
      `${APISERVER_MANIFEST} already exists`,
    ],
    ['FileAvailable--etc-kubernetes-admin.conf', leftovers([ADMIN_CONF]), `${ADMIN_CONF} already exists`],
  ]);
  const ca = await SimCertificateAuthority.generate('kubernetes');
  await writeAtomically(CA_KEY, ca.keyPem, 0o600);
  await writeAtomically(CA_CERT, ca.certPem, 0o644);
  say(`[certs] Using certificateDir folder "${PKI_DIR}"; generated the "ca" certificate and key`);
  await issueKubeconfig(ca, ca.certPem, server, ADMIN_CONF, { user: 'kubernetes-admin', groups: ['system:masters'] });
  await issueKubeconfig(ca, ca.certPem, server, KUBELET_CONF, {
    user: `system:node:${nodeName}`,
    groups: ['system:nodes'],
  });
  await issueKubeconfig(ca, ca.certPem, server, CONTROLLER_MANAGER_CONF, {
    user: 'system:kube-controller-manager',
    groups: [],
  });
  await issueKubeconfig(ca, ca.certPem, server, SCHEDULER_CONF, { user: 'system:kube-scheduler', groups: [] });
  const sans = [...((cluster.apiServer?.certSANs ?? []) as string[]), endpoint.replace(/:\d+$/, '')];
  const manifest = apiServerManifest({ address, port, sans, cluster });
  await writeAtomically(APISERVER_MANIFEST, dumpYaml(manifest), 0o600);
  say(`[control-plane] Creating static Pod manifest for "kube-apiserver" in "${MANIFESTS_DIR}"`);
  await writeKubeletFiles(docs, nodeRegistration);
  const admin = await readKubeconfig(ADMIN_CONF);
  await waitForApi(admin);
  say('[apiclient] All control plane components are healthy');
  await expectOk('upload kubeadm-config', {
    ...admin,
    method: 'PATCH',
    url: `${server}/api/v1/namespaces/kube-system/configmaps/kubeadm-config?fieldManager=kubeadm&force=true`,
    contentType: 'application/apply-patch+yaml',
    body: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'kubeadm-config', namespace: 'kube-system' },
      data: { ClusterConfiguration: dumpYaml(cluster) },
    },
  });
  await applyNodesKubeadmConfigRbac(admin);
  say('[upload-config] Storing the configuration used in ConfigMap "kubeadm-config" in the "kube-system" Namespace');
  if (argv.includes('--upload-certs')) {
    await stackOnEtcd(initConfig);
    await uploadCerts(admin, certificateKeyOf(initConfig, argv));
  }
  const isSkipped = (phase: string): boolean => {
    if (isPhaseSkipped(skip, phase)) {
      say(`[${phase}] skipped (skipPhases)`);
      return true;
    }
    return false;
  };
  if (!isSkipped('mark-control-plane')) await markControlPlane(admin, nodeName);
  const token = isSkipped('bootstrap-token') ? undefined : await bootstrapTokenPhase(admin, server, ca.certPem);
  for (const addon of ['addon/coredns', 'addon/kube-proxy']) {
    if (!isSkipped(addon)) say(`[${addon}] not simulated: nothing applied`);
  }
  if (!isSkipped('show-join-command')) {
    say(
      token
        ? `You can now join any number of machines by running the following on each node as root:\n\n  kubeadm join ${endpoint} --token ${token} --discovery-token-ca-cert-hash <not printed by the simulation>`
        : '[show-join-command] no token was created (the bootstrap-token phase was skipped)',
    );
  }
  say('Your Kubernetes control-plane has initialized successfully! (SIMULATED kubeadm: not a real control plane)');
}

/**
 * Whether kubeadm's phase runner skips `phase` for these `skipPhases`: a
 * name skips that phase and every phase under it (`addon` skips
 * `addon/coredns`), as kubeadm's workflow runner matches them
 * (cmd/kubeadm/app/cmd/phases/workflow/runner.go, `computePhaseRunFlags`).
 */
function isPhaseSkipped(skip: ReadonlySet<string>, phase: string): boolean {
  const parts = phase.split('/');
  return parts.some((_, index) => skip.has(parts.slice(0, index + 1).join('/')));
}

/** kubeadm's token alphabet and shape (`[a-z0-9]{6}.[a-z0-9]{16}`). */
function newBootstrapToken(): { id: string; secret: string } {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const pick = (length: number): string =>
    [...randomBytes(length)].map((byte) => alphabet[byte % alphabet.length]).join('');
  return { id: pick(6), secret: pick(16) };
}

/**
 * kubeadm init's `bootstrap-token` phase, when it is not skipped
 * (cmd/kubeadm/app/cmd/phases/init/bootstraptoken.go): a default token
 * (24 h, signing and authentication, group
 * system:bootstrappers:kubeadm:default-node-token), the RBAC that lets that
 * group get Nodes, post CSRs and have them auto-approved (phases/bootstraptoken/node),
 * the kube-public/cluster-info ConfigMap and the Role that lets anonymous
 * users read it (phases/bootstraptoken/clusterinfo). Real cluster-info gets
 * its JWS signatures from kube-controller-manager's bootstrapsigner, which
 * the simulation does not run, so this cluster-info carries none.
 * Returns the token.
 */
async function bootstrapTokenPhase(admin: KubeconfigAccess, server: string, caPem: string): Promise<string> {
  const { id, secret } = newBootstrapToken();
  const encode = (value: string): string => Buffer.from(value).toString('base64');
  await expectOk('create the default bootstrap token', {
    ...admin,
    method: 'POST',
    url: `${admin.server}/api/v1/namespaces/kube-system/secrets`,
    body: {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `bootstrap-token-${id}`, namespace: 'kube-system' },
      type: 'bootstrap.kubernetes.io/token',
      data: {
        'token-id': encode(id),
        'token-secret': encode(secret),
        description: encode("The default bootstrap token generated by 'kubeadm init'."),
        expiration: encode(new Date(Date.now() + 24 * 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z')),
        'usage-bootstrap-authentication': encode('true'),
        'usage-bootstrap-signing': encode('true'),
        'auth-extra-groups': encode(NODE_BOOTSTRAP_GROUP),
      },
    },
  });
  say(`[bootstrap-token] Using token: ${id}.${secret}`);
  const rbac = 'rbac.authorization.k8s.io/v1';
  const binding = (name: string, role: string, group: string): unknown => ({
    apiVersion: rbac,
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [{ kind: 'Group', name: group }],
  });
  const objects: Array<[string, unknown]> = [
    [
      '/apis/rbac.authorization.k8s.io/v1/clusterroles/kubeadm:get-nodes',
      {
        apiVersion: rbac,
        kind: 'ClusterRole',
        metadata: { name: 'kubeadm:get-nodes' },
        rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }],
      },
    ],
    [
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kubeadm:get-nodes',
      binding('kubeadm:get-nodes', 'kubeadm:get-nodes', NODE_BOOTSTRAP_GROUP),
    ],
    [
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kubeadm:kubelet-bootstrap',
      binding('kubeadm:kubelet-bootstrap', 'system:node-bootstrapper', NODE_BOOTSTRAP_GROUP),
    ],
    [
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kubeadm:node-autoapprove-bootstrap',
      binding(
        'kubeadm:node-autoapprove-bootstrap',
        'system:certificates.k8s.io:certificatesigningrequests:nodeclient',
        NODE_BOOTSTRAP_GROUP,
      ),
    ],
    [
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kubeadm:node-autoapprove-certificate-rotation',
      binding(
        'kubeadm:node-autoapprove-certificate-rotation',
        'system:certificates.k8s.io:certificatesigningrequests:selfnodeclient',
        'system:nodes',
      ),
    ],
    [
      '/api/v1/namespaces/kube-public/configmaps/cluster-info',
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'cluster-info', namespace: 'kube-public' },
        data: {
          kubeconfig: dumpYaml({
            apiVersion: 'v1',
            kind: 'Config',
            clusters: [
              { name: '', cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') } },
            ],
            contexts: [],
            'current-context': '',
            preferences: {},
            users: [],
          }),
        },
      },
    ],
    [
      '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-public/roles/kubeadm:bootstrap-signer-clusterinfo',
      {
        apiVersion: rbac,
        kind: 'Role',
        metadata: { name: 'kubeadm:bootstrap-signer-clusterinfo', namespace: 'kube-public' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: ['cluster-info'], verbs: ['get'] }],
      },
    ],
    [
      '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-public/rolebindings/kubeadm:bootstrap-signer-clusterinfo',
      {
        apiVersion: rbac,
        kind: 'RoleBinding',
        metadata: { name: 'kubeadm:bootstrap-signer-clusterinfo', namespace: 'kube-public' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'kubeadm:bootstrap-signer-clusterinfo' },
        subjects: [{ kind: 'User', name: 'system:anonymous' }],
      },
    ],
  ];
  for (const [path, body] of objects) {
    await expectOk(`apply ${path}`, {
      ...admin,
      method: 'PATCH',
      url: `${admin.server}${path}?fieldManager=kubeadm&force=true`,
      contentType: 'application/apply-patch+yaml',
      body,
    });
  }
  say(
    '[bootstrap-token] Configured RBAC rules and created the "cluster-info" ConfigMap in the "kube-public" namespace',
  );
  return `${id}.${secret}`;
}

function base64url(data: string | Buffer): string {
  return Buffer.from(data).toString('base64url');
}

/** kubeadm's token discovery, written independently of edgeadm (see the module comment). */
async function discover(bootstrap: Doc): Promise<{ server: string; caPem: string }> {
  const [id, secret] = String(bootstrap.token ?? '').split('.');
  if (!id || !secret) throw new KubeadmError('discovery.bootstrapToken.token is not <id>.<secret>');
  const pins = ((bootstrap.caCertHashes ?? []) as string[]).map((pin) => pin.toLowerCase());
  if (pins.length === 0 && bootstrap.unsafeSkipCAVerification !== true) {
    throw new KubeadmError(
      'discovery.bootstrapToken: Invalid value: "": using token-based discovery without caCertHashes can be unsafe',
    );
  }
  const url = `https://${bootstrap.apiServerEndpoint}/api/v1/namespaces/kube-public/configmaps/cluster-info`;
  const deadline = Date.now() + DISCOVERY_TIMEOUT_MS;
  let data: Record<string, string> | undefined;
  for (;;) {
    const response = await call({ method: 'GET', url }).catch((error: Error) => ({ status: 0, body: error.message }));
    const configMap =
      response.status === 200 ? (JSON.parse(response.body) as { data?: Record<string, string> }) : undefined;
    if (configMap?.data?.[`jws-kubeconfig-${id}`]) {
      data = configMap.data;
      break;
    }
    if (Date.now() > deadline) {
      throw new KubeadmError(`could not find a JWS signature in the cluster-info ConfigMap for token ID "${id}"`);
    }
    await sleep(POLL_INTERVAL_MS * 2);
  }
  const kubeconfig = data.kubeconfig ?? '';
  const header = base64url(JSON.stringify({ alg: 'HS256', kid: id }));
  const signature = createHmac('sha256', secret)
    .update(`${header}.${base64url(kubeconfig)}`)
    .digest('base64url');
  if (data[`jws-kubeconfig-${id}`] !== `${header}..${signature}`) {
    throw new KubeadmError(
      "failed to verify JWS signature of received cluster info object, can't trust this API Server",
    );
  }
  const parsed = loadYaml(kubeconfig) as { clusters?: Array<{ cluster?: Record<string, string> }> };
  const cluster = parsed.clusters?.[0]?.cluster ?? {};
  const caPem = Buffer.from(cluster['certificate-authority-data'] ?? '', 'base64').toString('utf8');
  const spki = new X509Certificate(caPem).publicKey.export({ type: 'spki', format: 'der' });
  const actual = `sha256:${createHash('sha256').update(spki).digest('hex')}`;
  if (pins.length > 0 && !pins.includes(actual)) {
    throw new KubeadmError(
      `cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "${actual}" are pinned`,
    );
  }
  say(`[discovery] Cluster info signature and contents are valid and the CA is pinned (${actual})`);
  return { server: cluster.server ?? `https://${bootstrap.apiServerEndpoint}`, caPem };
}

async function joinNode(configPath: string): Promise<void> {
  const docs = await loadConfig(configPath, ['JoinConfiguration']);
  const joinConfig = docs.JoinConfiguration!;
  const nodeRegistration = joinConfig.nodeRegistration as Doc | undefined;
  const bootstrap = joinConfig.discovery?.bootstrapToken as Doc | undefined;
  if (!bootstrap) throw new KubeadmError('discovery.bootstrapToken is required by this simulation');
  if (joinConfig.controlPlane) return joinControlPlane(docs, bootstrap);
  const cri = criSocketOf(nodeRegistration);
  await preflight([
    ['CRI', () => isSocketServing(cri), `container runtime is not running: ${cri} does not answer`],
    ['FileAvailable--etc-kubernetes-kubelet.conf', leftovers([KUBELET_CONF]), `${KUBELET_CONF} already exists`],
    ['FileAvailable--etc-kubernetes-pki-ca.crt', leftovers([CA_CERT]), `${CA_CERT} already exists`],
  ]);
  const { server, caPem } = await discover(bootstrap);
  await writeAtomically(CA_CERT, caPem, 0o644);
  const token = (joinConfig.discovery?.tlsBootstrapToken as string | undefined) ?? String(bootstrap.token);
  await startKubelet(docs, nodeRegistration, { server, caPem, token });
  say('This node has joined the cluster (SIMULATED kubeadm: not a real node)');
}

/** The TLS bootstrap stand-in: bootstrap-kubelet.conf for the kubelet, then wait for its kubelet.conf. */
async function startKubelet(
  docs: Record<string, Doc>,
  nodeRegistration: Doc | undefined,
  access: { server: string; caPem: string; token: string },
): Promise<void> {
  await writeAtomically(BOOTSTRAP_KUBELET_CONF, renderKubeconfig(access, 'tls-bootstrap-token-user'), 0o600);
  await writeKubeletFiles(docs, nodeRegistration);
  say('[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap');
  const deadline = Date.now() + TLS_BOOTSTRAP_TIMEOUT_MS;
  while (!existsSync(KUBELET_CONF)) {
    if (Date.now() > deadline)
      throw new KubeadmError('[kubelet-start] timed out waiting for the kubelet to write kubelet.conf');
    await sleep(POLL_INTERVAL_MS);
  }
}

/** Labels and taints a control-plane Node once it registered. */
async function markControlPlane(admin: KubeconfigAccess, nodeName: string): Promise<void> {
  const deadline = Date.now() + CONTROL_PLANE_TIMEOUT_MS;
  for (;;) {
    const response = await call({ ...admin, method: 'GET', url: `${admin.server}/api/v1/nodes/${nodeName}` }).catch(
      () => undefined,
    );
    if (response?.status === 200) break;
    if (Date.now() > deadline) throw new KubeadmError(`[mark-control-plane] Node ${nodeName} did not register in time`);
    await sleep(POLL_INTERVAL_MS);
  }
  await expectOk('mark the control plane', {
    ...admin,
    method: 'PATCH',
    url: `${admin.server}/api/v1/nodes/${nodeName}`,
    contentType: 'application/merge-patch+json',
    body: {
      metadata: { labels: { 'node-role.kubernetes.io/control-plane': '' } },
      spec: { taints: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }] },
    },
  });
  say(`[mark-control-plane] Marking the node ${nodeName} as control-plane`);
}

/** `kubeadm join` with `controlPlane`: another control plane (see the module comment). */
async function joinControlPlane(docs: Record<string, Doc>, bootstrap: Doc): Promise<void> {
  const joinConfig = docs.JoinConfiguration!;
  const nodeRegistration = joinConfig.nodeRegistration as Doc | undefined;
  const nodeName = (nodeRegistration?.name as string | undefined) ?? hostname();
  const controlPlane = joinConfig.controlPlane as Doc;
  const address = controlPlane.localAPIEndpoint?.advertiseAddress as string | undefined;
  const port = (controlPlane.localAPIEndpoint?.bindPort as number | undefined) ?? 6443;
  const certificateKey = controlPlane.certificateKey as string | undefined;
  if (!address) throw new KubeadmError('controlPlane.localAPIEndpoint.advertiseAddress is required by this simulation');
  if (!certificateKey) throw new KubeadmError('controlPlane.certificateKey is required by this simulation');
  const cri = criSocketOf(nodeRegistration);
  await preflight([
    ['CRI', () => isSocketServing(cri), `container runtime is not running: ${cri} does not answer`],
    ['FileAvailable--etc-kubernetes-kubelet.conf', leftovers([KUBELET_CONF]), `${KUBELET_CONF} already exists`],
    ['FileAvailable--etc-kubernetes-pki-ca.crt', leftovers([CA_CERT]), `${CA_CERT} already exists`],
    ['FileAvailable--etc-kubernetes-admin.conf', leftovers([ADMIN_CONF]), `${ADMIN_CONF} already exists`],
    [
      'FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml',
      leftovers([APISERVER_MANIFEST]),
      `${APISERVER_MANIFEST} already exists`,
    ],
    [
      'FileAvailable--etc-kubernetes-manifests-etcd.yaml',
      leftovers([ETCD_MANIFEST]),
      `${ETCD_MANIFEST} already exists`,
    ],
    [
      'DirAvailable--var-lib-etcd',
      async () => !existsSync(ETCD_DIR) || (await readdir(ETCD_DIR)).length === 0,
      `${ETCD_DIR} is not empty`,
    ],
  ]);
  const { server, caPem } = await discover(bootstrap);
  const token = String(bootstrap.token);
  const bootstrapAccess = { server, caPem, token };
  const kubeadmConfig = await call({
    ...bootstrapAccess,
    method: 'GET',
    url: `${server}/api/v1/namespaces/kube-system/configmaps/kubeadm-config`,
  });
  if (kubeadmConfig.status !== 200) {
    throw new KubeadmError(`unable to fetch the kubeadm-config ConfigMap: HTTP ${kubeadmConfig.status}`);
  }
  const cluster = (loadYaml(
    (JSON.parse(kubeadmConfig.body) as { data?: Record<string, string> }).data?.ClusterConfiguration ?? '',
  ) ?? {}) as Doc;
  const endpoint = cluster.controlPlaneEndpoint as string | undefined;
  if (!endpoint) {
    throw new KubeadmError(
      "unable to add a new control plane instance to a cluster that doesn't have a stable controlPlaneEndpoint address",
    );
  }
  // Before anything else is written: a wrong key fails here.
  await downloadCerts(bootstrapAccess, certificateKey);
  const ca = await SimCertificateAuthority.load(await readFile(CA_CERT, 'utf8'), await readFile(CA_KEY, 'utf8'));
  say(`[certs] Using the existing "ca" certificate and key (downloaded)`);
  const endpointServer = `https://${endpoint}`;
  await issueKubeconfig(ca, caPem, endpointServer, ADMIN_CONF, {
    user: 'kubernetes-admin',
    groups: ['system:masters'],
  });
  await issueKubeconfig(ca, caPem, endpointServer, CONTROLLER_MANAGER_CONF, {
    user: 'system:kube-controller-manager',
    groups: [],
  });
  await issueKubeconfig(ca, caPem, endpointServer, SCHEDULER_CONF, { user: 'system:kube-scheduler', groups: [] });
  const sans = [...((cluster.apiServer?.certSANs ?? []) as string[]), endpoint.replace(/:\d+$/, ''), address];
  // A cluster on stacked etcd (kubeadm-config's etcd.local): this control plane's member joins it first
  // (CreateStackedEtcdStaticPodManifestFile); else the simulation's API server forwards to the first one.
  const isStacked = cluster.etcd?.local !== undefined;
  if (isStacked) {
    const initialCluster = await addStackedMember(etcdClientUrl(new URL(server).hostname), nodeName, address, say);
    const etcd = etcdManifest({ nodeName, address, dataDir: ETCD_DIR, initialCluster, state: 'existing' });
    await writeAtomically(ETCD_MANIFEST, dumpYaml(etcd), 0o600);
    say(`[etcd] Creating static Pod manifest for local etcd in "${MANIFESTS_DIR}"`);
  }
  const manifest = apiServerManifest({
    address,
    port,
    sans,
    cluster,
    ...(isStacked ? { etcdServers: `http://127.0.0.1:${ETCD_CLIENT_PORT}` } : { sharedStoreServer: server }),
  });
  await writeAtomically(APISERVER_MANIFEST, dumpYaml(manifest), 0o600);
  say(`[control-plane] Creating static Pod manifest for "kube-apiserver" in "${MANIFESTS_DIR}"`);
  await startKubelet(docs, nodeRegistration, bootstrapAccess);
  const admin = await readKubeconfig(ADMIN_CONF);
  await waitForApi({ ...admin, server: `https://${address}:${port}` });
  await markControlPlane(admin, nodeName);
  say(
    'This node has joined the cluster and a new control plane instance was created (SIMULATED kubeadm: not a real control plane)',
  );
}

/**
 * Empties a directory as kubeadm reset does. The simulated API server may still
 * write into /var/lib/etcd/sim-apiserver while this runs (this simulation leaves
 * the kubelet to edgeadm to stop), so a removal that meets a file written after
 * its listing (ENOTEMPTY) is tried again.
 */
async function emptyDirectory(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  for (const entry of await readdir(dir)) {
    await rm(join(dir, entry), { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  }
}

async function reset(argv: string[]): Promise<void> {
  if (!argv.includes('-f') && !argv.includes('--force')) {
    throw new KubeadmError('reset needs -f in this simulation (it cannot ask for confirmation)');
  }
  say('[reset] WARNING: no systemd on this host (SIMULATED kubeadm): the kubelet is left to edgeadm to stop');
  if (existsSync(ETCD_MANIFEST)) await removeOwnEtcdMember();
  const dirs = [MANIFESTS_DIR, KUBELET_DIR, PKI_DIR, ETCD_DIR];
  for (const dir of dirs) await emptyDirectory(dir);
  say(`[reset] Deleting contents of directories: [${dirs.join(' ')}]`);
  const files = [
    ADMIN_CONF,
    KUBELET_CONF,
    BOOTSTRAP_KUBELET_CONF,
    CONTROLLER_MANAGER_CONF,
    SCHEDULER_CONF,
    '/etc/kubernetes/super-admin.conf',
  ];
  for (const file of files) await rm(file, { force: true });
  say(`[reset] Deleting files: [${files.join(' ')}]`);
}

/**
 * kubeadm reset's RemoveStackedEtcdMemberFromCluster: this control plane's
 * member removed through the cluster (its own member if it still runs, else
 * one it started with, else the control-plane endpoint's host); a warning
 * when none answers, as kubeadm warns and goes on.
 */
async function removeOwnEtcdMember(): Promise<void> {
  const pod = loadYaml(await readFile(ETCD_MANIFEST, 'utf8')) as Doc;
  const command = (pod.spec?.containers?.[0]?.command ?? []) as string[];
  const arg = (name: string): string | undefined =>
    command.find((c) => c.startsWith(`--${name}=`))?.slice(name.length + 3);
  const peerUrl = arg('initial-advertise-peer-urls');
  if (peerUrl === undefined) return;
  const hosts = [new URL(peerUrl).hostname];
  for (const entry of (arg('initial-cluster') ?? '').split(',')) {
    const peer = entry.slice(entry.indexOf('=') + 1);
    if (URL.canParse(peer)) hosts.push(new URL(peer).hostname);
  }
  if (existsSync(ADMIN_CONF)) hosts.push(new URL((await readKubeconfig(ADMIN_CONF)).server).hostname);
  const urls = [...new Set(hosts)].map(etcdClientUrl);
  if (!(await removeStackedMember(urls, peerUrl, say))) {
    say(
      '[reset] WARNING: failed to remove the etcd member: no member answered. Remove it by hand (etcdctl member remove)',
    );
  }
}

function configArg(argv: string[]): string {
  const at = argv.indexOf('--config');
  const value = at >= 0 ? argv[at + 1] : argv.find((arg) => arg.startsWith('--config='))?.slice('--config='.length);
  if (!value) throw new KubeadmError('this simulation needs --config FILE');
  return value;
}

/**
 * `kubeadm init|join --config FILE`, `kubeadm init phase upload-certs
 * --upload-certs --config FILE`, `kubeadm reset -f`, `kubeadm version`.
 */
export async function runSimKubeadm(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === 'version') {
      say(
        `kubeadm version: ${simReportedVersion(SIM_KUBERNETES_VERSION)} (SIMULATED kubeadm for edgeadm tests, not kubeadm)`,
      );
      return 0;
    }
    if (command === 'init' && rest[0] === 'phase' && rest[1] === 'upload-certs') {
      await uploadCertsPhase(configArg(rest), rest);
    } else if (command === 'init') await init(configArg(rest), rest);
    else if (command === 'join') await joinNode(configArg(rest));
    else if (command === 'reset') await reset(rest);
    else if (command === 'upgrade') await runUpgrade(rest);
    else {
      process.stderr.write(
        'usage: kubeadm init|join --config FILE | init phase upload-certs --upload-certs --config FILE | reset -f | upgrade plan|apply|node | version  (SIMULATED kubeadm)\n',
      );
      return 2;
    }
    return 0;
  } catch (error) {
    if (error instanceof KubeadmError) process.stderr.write(`error execution phase ${command}: ${error.message}\n`);
    else log(`failed: ${(error as Error).stack ?? String(error)}`);
    return 1;
  }
}
