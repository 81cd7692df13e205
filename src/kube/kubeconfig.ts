/**
 * Kubeconfig files as edgeadm uses them: reading the credentials of a
 * context (to talk to a cluster), pointing an admin kubeconfig at another
 * server address, and merging a cluster's admin kubeconfig into a user's
 * `~/.kube/config` as a new context. All pure functions over YAML text.
 */
import { dump, load } from 'js-yaml';
import { EdgeadmError } from '../errors.js';

/** How edgeadm reaches one API server. Holds credentials: never log it. */
export interface KubeCredentials {
  /** `https://host:port`. */
  server: string;
  /** PEM CA bundle; undefined means the system's roots. */
  caPem?: string;
  /** Bearer token (static, service account or bootstrap token). */
  token?: string;
  clientCertificatePem?: string;
  clientKeyPem?: string;
  /** The context the credentials came from. */
  contextName: string;
}

interface NamedEntry<T> {
  name?: unknown;
  cluster?: T;
  user?: T;
  context?: T;
}

interface KubeconfigDocument {
  apiVersion?: string;
  kind?: string;
  clusters?: NamedEntry<Record<string, unknown>>[];
  users?: NamedEntry<Record<string, unknown>>[];
  contexts?: NamedEntry<Record<string, unknown>>[];
  'current-context'?: string;
  preferences?: Record<string, unknown>;
}

function invalid(what: string, why: string, cause?: unknown): EdgeadmError {
  return new EdgeadmError(`malformed kubeconfig in ${what}: ${why}`, {
    code: 'E_KUBECONFIG_INVALID',
    ...(cause === undefined ? {} : { cause }),
  });
}

/** Parses kubeconfig text into its document (an empty text is an empty kubeconfig). */
export function parseKubeconfig(text: string, what: string): KubeconfigDocument {
  if (text.trim() === '') return {};
  let document: unknown;
  try {
    document = load(text);
  } catch (error) {
    throw invalid(what, (error as Error).message, error);
  }
  if (document === undefined || document === null) return {};
  if (typeof document !== 'object' || Array.isArray(document)) throw invalid(what, 'it is not a YAML mapping');
  return document as KubeconfigDocument;
}

function decodeData(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? Buffer.from(value, 'base64').toString('utf8') : undefined;
}

/**
 * The credentials of a context (the current one by default). File
 * references (`certificate-authority`, `client-certificate`, `client-key`)
 * are resolved through `readFile`, so a kubeconfig read from a remote host
 * can be resolved against that host.
 *
 * @throws {EdgeadmError} `E_KUBECONFIG_INVALID` when the context, its
 * cluster or its user is missing.
 */
export async function kubeCredentialsOf(
  text: string,
  options: { what: string; context?: string; readFile?: (path: string) => Promise<string> },
): Promise<KubeCredentials> {
  const { what } = options;
  const document = parseKubeconfig(text, what);
  const contextName = options.context ?? document['current-context'];
  if (!contextName) throw invalid(what, 'no current-context');
  const context = document.contexts?.find((entry) => entry.name === contextName)?.context;
  if (!context) throw invalid(what, `no context named ${JSON.stringify(contextName)}`);
  const cluster = document.clusters?.find((entry) => entry.name === context.cluster)?.cluster;
  if (!cluster || typeof cluster.server !== 'string') {
    throw invalid(what, `context ${JSON.stringify(contextName)} has no cluster with a server`);
  }
  const user = document.users?.find((entry) => entry.name === context.user)?.user ?? {};
  const fromFile = async (key: string): Promise<string | undefined> => {
    const path = (key in cluster ? cluster[key] : user[key]) as unknown;
    if (typeof path !== 'string' || path === '') return undefined;
    if (!options.readFile) throw invalid(what, `${key} refers to a file (${path}) and no file reader was given`);
    return options.readFile(path);
  };
  const caPem = decodeData(cluster['certificate-authority-data']) ?? (await fromFile('certificate-authority'));
  const clientCertificatePem = decodeData(user['client-certificate-data']) ?? (await fromFile('client-certificate'));
  const clientKeyPem = decodeData(user['client-key-data']) ?? (await fromFile('client-key'));
  const token = typeof user.token === 'string' && user.token !== '' ? user.token : undefined;
  return {
    server: cluster.server,
    contextName,
    ...(caPem === undefined ? {} : { caPem }),
    ...(token === undefined ? {} : { token }),
    ...(clientCertificatePem === undefined ? {} : { clientCertificatePem }),
    ...(clientKeyPem === undefined ? {} : { clientKeyPem }),
  };
}

/**
 * A self-contained kubeconfig for `credentials`, with cluster, user and
 * context all called `name`.
 */
export function renderKubeconfig(credentials: KubeCredentials, name: string): string {
  const user: Record<string, string> = {};
  if (credentials.token !== undefined) user.token = credentials.token;
  if (credentials.clientCertificatePem !== undefined) {
    user['client-certificate-data'] = Buffer.from(credentials.clientCertificatePem).toString('base64');
  }
  if (credentials.clientKeyPem !== undefined) {
    user['client-key-data'] = Buffer.from(credentials.clientKeyPem).toString('base64');
  }
  const cluster: Record<string, string> = { server: credentials.server };
  if (credentials.caPem !== undefined) {
    cluster['certificate-authority-data'] = Buffer.from(credentials.caPem).toString('base64');
  }
  const document: KubeconfigDocument = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster }],
    users: [{ name, user }],
    contexts: [{ name, context: { cluster: name, user: name } }],
    'current-context': name,
  };
  return dump(document, { lineWidth: -1, noRefs: true });
}

/** Options of {@link mergeKubeconfig}. */
export interface MergeKubeconfigOptions {
  /** Make the merged context the current one. */
  setCurrent: boolean;
}

/**
 * Merges a one-context kubeconfig (as {@link renderKubeconfig} writes) into
 * an existing file's text: entries of the same name are replaced, others
 * are kept as they were.
 */
export function mergeKubeconfig(
  existing: string | undefined,
  incoming: string,
  options: MergeKubeconfigOptions,
): string {
  const base = parseKubeconfig(existing ?? '', 'the existing kubeconfig');
  const add = parseKubeconfig(incoming, 'the new kubeconfig');
  const mergeList = <T extends NamedEntry<Record<string, unknown>>>(a: T[] | undefined, b: T[] | undefined): T[] => {
    const names = new Set((b ?? []).map((entry) => entry.name));
    return [...(a ?? []).filter((entry) => !names.has(entry.name)), ...(b ?? [])];
  };
  const merged: KubeconfigDocument = {
    ...base,
    apiVersion: base.apiVersion ?? 'v1',
    kind: base.kind ?? 'Config',
    clusters: mergeList(base.clusters, add.clusters),
    users: mergeList(base.users, add.users),
    contexts: mergeList(base.contexts, add.contexts),
  };
  if (options.setCurrent && add['current-context']) merged['current-context'] = add['current-context'];
  else if (base['current-context'] === undefined && add['current-context']) {
    merged['current-context'] = add['current-context'];
  }
  return dump(merged, { lineWidth: -1, noRefs: true });
}
