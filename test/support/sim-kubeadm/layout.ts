/**
 * What the SIMULATED kubeadm and the SIMULATED kubelet (neither is real)
 * agree on: the files real kubeadm and kubelet use (the same paths, so that
 * edgeadm's kubeadm driver is exercised against them), kubeconfigs with a
 * client certificate or a token, the kubelet's flags file, and reaching the
 * container runtime's socket.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { dump as dumpYaml, load as loadYaml } from 'js-yaml';

/** The version the simulations report when their package names none; `+sim` says what they are. */
export const SIM_KUBERNETES_VERSION = 'v1.30.4+sim';

/**
 * The version a static Pod's image names (`registry.k8s.io/kube-apiserver:v1.31.2`
 * → `v1.31.2`): what a real kube-apiserver started from that manifest
 * reports at `/version`, since the image is built for its tag. Undefined
 * when the tag is not a version.
 */
export function imageVersion(image: string | undefined): string | undefined {
  const tag = /:([^:/@]+)$/.exec(image ?? '')?.[1];
  return tag !== undefined && /^v\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?$/.test(tag) ? tag : undefined;
}
/**
 * The control-plane images kubeadm needs for a version, by reference (what
 * its `ImagePullCheck` pulls unless present; cmd/kubeadm/app/images,
 * GetControlPlaneImages). etcd, CoreDNS and pause, whose tags follow their
 * own versions, are not simulated.
 */
export function controlPlaneImageRefs(version: string): string[] {
  return ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kube-proxy'].map(
    (name) => `registry.k8s.io/${name}:${version}`,
  );
}

/** The containerd namespace the CRI plugin (and so the kubelet and kubeadm) takes images from. */
export const CRI_IMAGE_NAMESPACE = 'k8s.io';

export const KUBERNETES_DIR = '/etc/kubernetes';
export const PKI_DIR = `${KUBERNETES_DIR}/pki`;
export const CA_CERT = `${PKI_DIR}/ca.crt`;
export const CA_KEY = `${PKI_DIR}/ca.key`;
export const MANIFESTS_DIR = `${KUBERNETES_DIR}/manifests`;
export const APISERVER_MANIFEST = `${MANIFESTS_DIR}/kube-apiserver.yaml`;
/** Stacked etcd's static Pod (HA control planes only in this simulation: stacked-etcd.ts). */
export const ETCD_MANIFEST = `${MANIFESTS_DIR}/etcd.yaml`;
/**
 * Where an API server on stacked etcd serves when it leads (the simulated
 * API server on etcd: ../sim-apiserver/etcd-datastore.ts); its public port
 * forwards there.
 */
export const ETCD_APISERVER_INTERNAL_PORT = 6446;
export const ADMIN_CONF = `${KUBERNETES_DIR}/admin.conf`;
export const KUBELET_CONF = `${KUBERNETES_DIR}/kubelet.conf`;
export const BOOTSTRAP_KUBELET_CONF = `${KUBERNETES_DIR}/bootstrap-kubelet.conf`;
export const CONTROLLER_MANAGER_CONF = `${KUBERNETES_DIR}/controller-manager.conf`;
export const SCHEDULER_CONF = `${KUBERNETES_DIR}/scheduler.conf`;
export const KUBELET_DIR = '/var/lib/kubelet';
export const KUBELET_CONFIG = `${KUBELET_DIR}/config.yaml`;
export const KUBELET_FLAGS_ENV = `${KUBELET_DIR}/kubeadm-flags.env`;
/** The kubelet unit's drop-ins (10-kubeadm.conf, and edgeadm's edge drop-in on an edge node). */
export const KUBELET_DROP_IN_DIR = '/etc/systemd/system/kubelet.service.d';
/** Stacked etcd's data directory; the simulated API server keeps its objects here instead. */
export const ETCD_DIR = '/var/lib/etcd';
export const DEFAULT_CRI_SOCKET = 'unix:///run/containerd/containerd.sock';
/**
 * The annotation on a joining control plane's kube-apiserver manifest that
 * names the first control plane's API server: stacked etcd would join the
 * first member, and the simulation instead forwards every request there (one
 * store for the whole simulated cluster). Real kubeadm writes no such thing.
 */
export const SHARED_STORE_ANNOTATION = 'sim-kubeadm.edgeadm.io/shared-store-server';
/** The simulated API server's annotation with the serving certificate's extra names. */
export const SANS_ANNOTATION = 'sim-kubeadm.edgeadm.io/cert-sans';

/** A failure worded like kubeadm's; the simulated kubeadm prints it as `error execution phase …`. */
export class KubeadmError extends Error {}

/** What a kubeconfig gives a client. */
export interface KubeconfigAccess {
  server: string;
  caPem: string;
  token?: string;
  certPem?: string;
  keyPem?: string;
}

const b64 = (text: string): string => Buffer.from(text).toString('base64');
const unb64 = (text: string | undefined): string | undefined =>
  text === undefined ? undefined : Buffer.from(text, 'base64').toString('utf8');

/** A kubeconfig for one cluster and user, as kubeadm writes them (embedded data). */
export function renderKubeconfig(access: KubeconfigAccess, user: string): string {
  return dumpYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'kubernetes', cluster: { server: access.server, 'certificate-authority-data': b64(access.caPem) } },
    ],
    users: [
      {
        name: user,
        user: {
          ...(access.token ? { token: access.token } : {}),
          ...(access.certPem ? { 'client-certificate-data': b64(access.certPem) } : {}),
          ...(access.keyPem ? { 'client-key-data': b64(access.keyPem) } : {}),
        },
      },
    ],
    contexts: [{ name: `${user}@kubernetes`, context: { cluster: 'kubernetes', user } }],
    'current-context': `${user}@kubernetes`,
  });
}

/** Inline data, else the file it names (a kubeconfig may do either), else nothing. */
async function dataOrFile(data: string | undefined, file: string | undefined): Promise<string | undefined> {
  if (data !== undefined) return unb64(data);
  return file === undefined ? undefined : await readFile(file, 'utf8');
}

/**
 * Reads a kubeconfig written by {@link renderKubeconfig}, by edgeadm (the
 * edge-proxy's kubelet kubeconfig refers to files) or by edgeadm's tests.
 */
export async function readKubeconfig(path: string): Promise<KubeconfigAccess> {
  const config = loadYaml(await readFile(path, 'utf8')) as {
    clusters?: Array<{ cluster?: Record<string, string> }>;
    users?: Array<{ user?: Record<string, string> }>;
  };
  const cluster = config.clusters?.[0]?.cluster ?? {};
  const user = config.users?.[0]?.user ?? {};
  const certPem = await dataOrFile(user['client-certificate-data'], user['client-certificate']);
  const keyPem = await dataOrFile(user['client-key-data'], user['client-key']);
  const token = user.token ?? (user.tokenFile ? (await readFile(user.tokenFile, 'utf8')).trim() : undefined);
  return {
    server: cluster.server ?? '',
    caPem: (await dataOrFile(cluster['certificate-authority-data'], cluster['certificate-authority'])) ?? '',
    ...(token ? { token } : {}),
    ...(certPem ? { certPem } : {}),
    ...(keyPem ? { keyPem } : {}),
  };
}

/** The kubelet flags kubeadm writes (`KUBELET_KUBEADM_ARGS="--a=b --c=d"`). */
export function renderKubeletFlags(flags: Record<string, string>): string {
  const args = Object.entries(flags).map(([key, value]) => `--${key}=${value}`);
  return `KUBELET_KUBEADM_ARGS="${args.join(' ')}"\n`;
}

/** Parses {@link renderKubeletFlags}' output. */
export async function readKubeletFlags(): Promise<Record<string, string>> {
  if (!existsSync(KUBELET_FLAGS_ENV)) return {};
  const text = await readFile(KUBELET_FLAGS_ENV, 'utf8');
  const value = /KUBELET_KUBEADM_ARGS="([^"]*)"/.exec(text)?.[1] ?? '';
  const flags: Record<string, string> = {};
  for (const arg of value.split(' ').filter(Boolean)) {
    const match = /^--([^=]+)=(.*)$/.exec(arg);
    if (match) flags[match[1]!] = match[2]!;
  }
  return flags;
}

/**
 * The value a flag (`--name=value`) has in the kubelet's
 * `KUBELET_KUBECONFIG_ARGS` as systemd would expand it from the unit's
 * drop-ins: the test hosts have no systemd, so the direct service manager
 * starts the unit's bare `ExecStart` and the simulated kubelet reads the
 * drop-ins itself. Drop-ins apply in name order; the last to set the
 * variable wins, as in systemd.
 */
export async function kubeletKubeconfigArgOf(name: string): Promise<string | undefined> {
  if (!existsSync(KUBELET_DROP_IN_DIR)) return undefined;
  let args: string | undefined;
  for (const file of (await readdir(KUBELET_DROP_IN_DIR)).filter((f) => f.endsWith('.conf')).sort()) {
    const text = await readFile(`${KUBELET_DROP_IN_DIR}/${file}`, 'utf8');
    for (const match of text.matchAll(/^Environment="KUBELET_KUBECONFIG_ARGS=([^"]*)"$/gm)) args = match[1];
  }
  const prefix = `--${name}=`;
  return args
    ?.split(' ')
    .find((arg) => arg.startsWith(prefix))
    ?.slice(prefix.length);
}

/** True when the runtime's Unix socket (`unix:///…`) accepts a connection. */
export function isSocketServing(endpoint: string): Promise<boolean> {
  const path = endpoint.replace(/^unix:\/\//, '');
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
