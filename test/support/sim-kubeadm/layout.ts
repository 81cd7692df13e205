/**
 * What the SIMULATED kubeadm and the SIMULATED kubelet (neither is real)
 * agree on: the files real kubeadm and kubelet use (the same paths, so that
 * edgeadm's kubeadm driver is exercised against them), kubeconfigs with a
 * client certificate or a token, the kubelet's flags file, and reaching the
 * container runtime's socket.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { dump as dumpYaml, load as loadYaml } from 'js-yaml';

/** The version the simulations report; `+sim` says what they are. */
export const SIM_KUBERNETES_VERSION = 'v1.30.4+sim';
export const KUBERNETES_DIR = '/etc/kubernetes';
export const PKI_DIR = `${KUBERNETES_DIR}/pki`;
export const CA_CERT = `${PKI_DIR}/ca.crt`;
export const CA_KEY = `${PKI_DIR}/ca.key`;
export const MANIFESTS_DIR = `${KUBERNETES_DIR}/manifests`;
export const APISERVER_MANIFEST = `${MANIFESTS_DIR}/kube-apiserver.yaml`;
export const ADMIN_CONF = `${KUBERNETES_DIR}/admin.conf`;
export const KUBELET_CONF = `${KUBERNETES_DIR}/kubelet.conf`;
export const BOOTSTRAP_KUBELET_CONF = `${KUBERNETES_DIR}/bootstrap-kubelet.conf`;
export const CONTROLLER_MANAGER_CONF = `${KUBERNETES_DIR}/controller-manager.conf`;
export const SCHEDULER_CONF = `${KUBERNETES_DIR}/scheduler.conf`;
export const KUBELET_DIR = '/var/lib/kubelet';
export const KUBELET_CONFIG = `${KUBELET_DIR}/config.yaml`;
export const KUBELET_FLAGS_ENV = `${KUBELET_DIR}/kubeadm-flags.env`;
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

/** Reads a kubeconfig written by {@link renderKubeconfig} (or by edgeadm's tests). */
export async function readKubeconfig(path: string): Promise<KubeconfigAccess> {
  const config = loadYaml(await readFile(path, 'utf8')) as {
    clusters?: Array<{ cluster?: Record<string, string> }>;
    users?: Array<{ user?: Record<string, string> }>;
  };
  const cluster = config.clusters?.[0]?.cluster ?? {};
  const user = config.users?.[0]?.user ?? {};
  const certPem = unb64(user['client-certificate-data']);
  const keyPem = unb64(user['client-key-data']);
  return {
    server: cluster.server ?? '',
    caPem: unb64(cluster['certificate-authority-data']) ?? '',
    ...(user.token ? { token: user.token } : {}),
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
