// OpenYurt's yurthub as the edge-proxy bench's peer (issue #34): the edge
// caching proxy edgeadm's `agent edge-proxy` competes with, built from its Go
// module by `test/real/build.sh yurthub` (bench/peers/yurthub). This module
// owns what it takes to run one against the bench's simulated API server:
// the files a node's yurthub finds on disk, the cluster objects it reads, its
// arguments, and how to tell it is serving and offline.
//
// Certificates. yurthub serves nothing until it holds a client certificate
// for the API server and a serving certificate (cmd/yurthub/app/config
// `Complete` polls `certMgr.Ready()`); it normally gets both through CSRs,
// which the simulation does not sign. client-go's certificate FileStore loads
// `<pki>/<name>-current.pem` and requests nothing while that certificate is
// valid and matches its template, so the bench places, signed by the
// simulation's CA (ca.key is in its data dir):
//
//   <root>/bootstrap-hub.conf        the --bootstrap-file, as `yurtadm join` writes it
//   <root>/yurthub.conf              the hub's kubeconfig (prepareConfigAndCaFile reuses it)
//   <root>/pki/ca.crt                the cluster CA
//   <root>/pki/yurthub-current.pem   CN=system:node:<node>, O=openyurt:yurthub, O=system:nodes (client)
//   <root>/pki/yurthub-server-current.pem  the same node, serving 127.0.0.1, the dummy IP and
//                                    kubernetes.default's ClusterIP and names (the template's SANs)
//
// Requests. yurthub caches a response only for a component it knows, taken
// from the User-Agent before the first "/" (`WithRequestClientComponent`,
// DefaultCacheAgents: kubelet, kube-proxy, flanneld, coredns, ...). The bench
// sends its GETs as kube-proxy: a pod that reaches the API server through
// yurthub with its service account's bearer token over yurthub's secure port
// (10268, the address in-cluster config is pointed at on an OpenYurt node),
// which yurthub forwards with that token and no certificate of its own
// (`RemoteProxy.RoundTrip`, bearer requests). That is the shape of the bench's
// requests to edgeadm's proxy too: HTTPS with the same bearer token. The
// kubelet's own path (plain HTTP on 10261, no credentials, yurthub's node
// certificate upstream) would spare yurthub the TLS that edgeadm's proxy pays.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where test/real/build.sh leaves its builds (EDGEADM_RIG_CACHE, as the build). */
const OUT = join(process.env.EDGEADM_RIG_CACHE ?? '/var/cache/edgeadm-rig', 'out', 'yurthub');
/** The bench node's name: the certificates, the Node object and yurthub's lease carry it. */
export const YURTHUB_NODE = 'bench-edge-node';
/** The User-Agent of the bench's requests through yurthub: a component it caches for (see the header). */
export const YURTHUB_USER_AGENT = 'kube-proxy/v1.30.4 (linux/amd64) kubernetes/edgeadm-bench';
/** yurthub's dummy interface address (options.DefaultDummyIfIP4): in the serving template's SANs even with the interface off. */
const DUMMY_IF_IP = '169.254.2.1';
/** The ClusterIP the bench gives default/kubernetes: yurthub puts it in its serving certificate's template. */
const KUBERNETES_SERVICE_IP = '10.96.0.1';

/** The built yurthub and its version (versions.json), or undefined when it is not built. */
export function yurthubBuild() {
  const binary = join(OUT, 'yurthub');
  const versions = join(OUT, 'versions.json');
  if (!existsSync(binary) || !existsSync(versions)) return undefined;
  return { binary, version: JSON.parse(readFileSync(versions, 'utf8')).version };
}

/**
 * The objects a cluster holds for a yurthub node, created through `call`
 * (the bench's admin client): the node, default/kubernetes (kube-apiserver
 * always has it; yurthub reads its ClusterIP for its serving certificate),
 * and read/lease rights for the node's identity, standing in for the Node
 * authorizer and OpenYurt's yurt-hub ClusterRole (the simulation has RBAC only).
 */
export async function createYurthubClusterObjects(call) {
  const objects = [
    ['/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: YURTHUB_NODE } }],
    [
      '/api/v1/namespaces/default/services',
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'kubernetes', namespace: 'default' },
        spec: { clusterIP: KUBERNETES_SERVICE_IP, ports: [{ name: 'https', port: 443, targetPort: 6443 }] },
      },
    ],
    [
      '/apis/rbac.authorization.k8s.io/v1/clusterroles',
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'bench:yurthub-node' },
        rules: [
          { apiGroups: ['*'], resources: ['*'], verbs: ['get', 'list', 'watch'] },
          { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
        ],
      },
    ],
    [
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'bench:yurthub-node' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'bench:yurthub-node' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:nodes' }],
      },
    ],
  ];
  for (const [path, body] of objects) {
    const status = await call('POST', path, body);
    if (status !== 201) throw new Error(`creating ${path}/${body.metadata.name} for yurthub: HTTP ${status}`);
  }
}

/** A node certificate signed by the simulation's CA, as one PEM (certificate + key), the FileStore's form. */
function signedPem(dir, name, { subject, extensions, caCert, caKey }) {
  const at = (suffix) => join(dir, `${name}.${suffix}`);
  const openssl = (...args) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', at('ec'));
  openssl('pkcs8', '-topk8', '-nocrypt', '-in', at('ec'), '-out', at('key'));
  openssl('req', '-new', '-key', at('key'), '-subj', subject, '-out', at('csr'));
  writeFileSync(at('ext'), extensions);
  openssl(
    'x509',
    '-req',
    '-in',
    at('csr'),
    '-CA',
    caCert,
    '-CAkey',
    caKey,
    '-CAcreateserial',
    '-days',
    '30',
    '-extfile',
    at('ext'),
    '-out',
    at('crt'),
  );
  return readFileSync(at('crt'), 'utf8') + readFileSync(at('key'), 'utf8');
}

/** A kubeconfig for `server` trusting `caPem`, authenticating with `user`. */
function kubeconfig(server, caPem, user) {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'default-cluster',
        cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') },
      },
    ],
    users: [{ name: 'default-auth', user }],
    contexts: [{ name: 'default-context', context: { cluster: 'default-cluster', user: 'default-auth' } }],
    'current-context': 'default-context',
  });
}

/**
 * Writes a node's yurthub files into `rootDir` (see the header) for the API
 * server at `serverAddr` (host:port; yurthub.conf's server must name it, or
 * yurthub wipes its root dir as belonging to another cluster).
 */
export function prepareYurthubRoot({ rootDir, serverAddr, simDir }) {
  const pki = join(rootDir, 'pki');
  const scratch = join(rootDir, 'openssl');
  mkdirSync(pki, { recursive: true, mode: 0o700 });
  mkdirSync(scratch, { recursive: true, mode: 0o700 });
  const caCert = join(simDir, 'ca.crt');
  const caKey = join(simDir, 'ca.key');
  const caPem = readFileSync(caCert, 'utf8');
  const server = `https://${serverAddr}`;
  writeFileSync(join(pki, 'ca.crt'), caPem);
  // No credentials: yurthub reads its bootstrap file only to request a client certificate, and it has one.
  writeFileSync(join(rootDir, 'bootstrap-hub.conf'), kubeconfig(server, caPem, {}), { mode: 0o600 });
  const clientPem = join(pki, 'yurthub-current.pem');
  writeFileSync(
    join(rootDir, 'yurthub.conf'),
    kubeconfig(server, caPem, { 'client-certificate': clientPem, 'client-key': clientPem }),
    { mode: 0o600 },
  );
  writeFileSync(
    clientPem,
    signedPem(scratch, 'client', {
      subject: `/O=openyurt:yurthub/O=system:nodes/CN=system:node:${YURTHUB_NODE}`,
      extensions: 'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n',
      caCert,
      caKey,
    }),
    { mode: 0o600 },
  );
  writeFileSync(
    join(pki, 'yurthub-server-current.pem'),
    signedPem(scratch, 'server', {
      subject: `/O=system:nodes/CN=system:node:${YURTHUB_NODE}`,
      extensions:
        'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' +
        `subjectAltName=IP:127.0.0.1,IP:${DUMMY_IF_IP},IP:${KUBERNETES_SERVICE_IP},DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n`,
      caCert,
      caKey,
    }),
    { mode: 0o600 },
  );
  return { ca: caPem };
}

/** yurthub's arguments for a node whose files are in `rootDir` (prepareYurthubRoot). */
export function yurthubArgs({ rootDir, serverAddr, ports }) {
  return [
    '--working-mode=edge',
    `--node-name=${YURTHUB_NODE}`,
    `--server-addr=https://${serverAddr}`,
    `--root-dir=${rootDir}`,
    `--bootstrap-file=${join(rootDir, 'bootstrap-hub.conf')}`,
    `--disk-cache-path=${join(rootDir, 'cache')}`,
    // No dummy interface (it needs CAP_NET_ADMIN): the secure port then binds the proxy address.
    '--enable-dummy-if=false',
    '--bind-address=127.0.0.1',
    '--bind-proxy-address=127.0.0.1',
    `--serve-port=${ports.serve}`,
    `--proxy-port=${ports.proxy}`,
    `--proxy-secure-port=${ports.secure}`,
  ];
}

/**
 * Starts yurthub and resolves once its secure port serves. Returns its
 * process, its URL, and `isOffline()` (its own verdict, the
 * node_yurthub_server_healthy_status metric its health checker sets).
 */
export async function startYurthub({ binary, rootDir, serverAddr, ports, waitMs, track }) {
  const child = spawn(binary, yurthubArgs({ rootDir, serverAddr, ports }), { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk) => (output = (output + chunk).slice(-64_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  track?.({ child, name: 'yurthub', output: () => output });
  const metrics = async () => (await fetch(`http://127.0.0.1:${ports.serve}/metrics`)).text();
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`yurthub exited (${child.exitCode}): ${output.slice(-4000)}`);
    if (Date.now() > deadline) throw new Error(`yurthub did not start serving: ${output.slice(-4000)}`);
    const ready = await fetch(`http://127.0.0.1:${ports.serve}/v1/readyz`)
      .then((r) => r.ok)
      .catch(() => false);
    if (ready) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    child,
    url: `https://127.0.0.1:${ports.secure}`,
    output: () => output,
    isOffline: async () => /^node_yurthub_server_healthy_status\{[^}]*\} 0$/m.test(await metrics()),
  };
}
