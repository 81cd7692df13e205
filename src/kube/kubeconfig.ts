/**
 * Kubeconfig files as edgeadm uses them: reading the credentials of a
 * context (to talk to a cluster), pointing an admin kubeconfig at another
 * server address, and merging a cluster's admin kubeconfig into a user's
 * `~/.kube/config` as a new context. All pure functions over YAML text,
 * except {@link readKubeconfigFile}, the one reader of local kubeconfig
 * files: regular files only, bounded in size, UTF-8.
 *
 * Credentials are checked where they are read: a client key must be a PEM
 * private key that matches its certificate, a token one printable word.
 * Anything else would only fail later, at an API server, after edgeadm has
 * acted on it (registered a cluster, installed an agent).
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { dump, load } from 'js-yaml';
import { EdgeadmError } from '../errors.js';
import { MAX_KUBECONFIG_FILE_BYTES } from './limits.js';
import { resolveKubeconfigView, type KubeconfigView } from './kubeconfig-view.js';

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
  /** The cluster entry says `insecure-skip-tls-verify: true`. */
  isInsecureSkipTlsVerify?: boolean;
  /** The user authenticates through an `exec` or `auth-provider` plugin, which edgeadm does not run. */
  authPlugin?: 'exec' | 'auth-provider';
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
  return document;
}

function decodeData(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? Buffer.from(value, 'base64').toString('utf8') : undefined;
}

/** Where one credential of a context lives: inline (already decoded) or in a file. */
type Source = { value: string } | { file: string } | undefined;

/** A context's cluster and user, with file references not yet read. */
interface ContextSources {
  server: string;
  contextName: string;
  ca: Source;
  clientCertificate: Source;
  clientKey: Source;
  token: Source;
  isInsecureSkipTlsVerify: boolean;
  authPlugin: 'exec' | 'auth-provider' | undefined;
}

/**
 * The cluster and user of a context (the current one, or the only one when
 * none is current), as kubectl reads them: inline `*-data` wins over the
 * file form; `tokenFile` is read when there is no `token`.
 */
function contextSources(text: string, what: string, context?: string): ContextSources {
  const document = parseKubeconfig(text, what);
  const contexts = document.contexts ?? [];
  const contextName =
    context ?? document['current-context'] ?? (contexts.length === 1 ? (contexts[0]!.name as string) : undefined);
  if (!contextName) throw invalid(what, 'no current-context');
  const found = contexts.find((entry) => entry.name === contextName)?.context;
  if (!found) throw invalid(what, `no context named ${JSON.stringify(contextName)}`);
  const cluster = document.clusters?.find((entry) => entry.name === found.cluster)?.cluster;
  if (!cluster || typeof cluster.server !== 'string') {
    throw invalid(what, `context ${JSON.stringify(contextName)} has no cluster with a server`);
  }
  const user = document.users?.find((entry) => entry.name === found.user)?.user ?? {};
  const source = (entry: Record<string, unknown>, key: string): Source => {
    const data = decodeData(entry[`${key}-data`]);
    if (data !== undefined) return { value: data };
    const file = entry[key];
    return typeof file === 'string' && file !== '' ? { file } : undefined;
  };
  const token =
    typeof user.token === 'string' && user.token !== ''
      ? { value: user.token }
      : typeof user.tokenFile === 'string' && user.tokenFile !== ''
        ? { file: user.tokenFile }
        : undefined;
  return {
    server: cluster.server,
    contextName,
    ca: source(cluster, 'certificate-authority'),
    clientCertificate: source(user, 'client-certificate'),
    clientKey: source(user, 'client-key'),
    token,
    isInsecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] === true,
    authPlugin: user.exec !== undefined ? 'exec' : user['auth-provider'] !== undefined ? 'auth-provider' : undefined,
  };
}

/** Where a credential came from, for error messages (never its content). */
function originOf(source: Source, field: string): string {
  return source !== undefined && 'file' in source ? `${field} (file ${source.file})` : field;
}

/**
 * A bearer token is one word of printable ASCII: it goes into an HTTP
 * header, where a newline or a control character is refused (or worse,
 * splits the header). A token file of several lines is not a token.
 */
const TOKEN_PATTERN = /^[\x21-\x7e]+$/;

/**
 * Checks the credentials a context names: the token is one printable word,
 * a client certificate comes with its key, the key is a PEM private key and
 * matches the certificate. Messages name the field and file, never the
 * content. (The CA is left to the TLS handshake, which names its own errors.)
 */
function checkCredentials(credentials: KubeCredentials, sources: ContextSources, what: string): void {
  if (credentials.token !== undefined && !TOKEN_PATTERN.test(credentials.token)) {
    throw invalid(
      what,
      `the token in ${originOf(sources.token, 'token')} holds whitespace or control characters (a token is one line of printable characters)`,
    );
  }
  const certPem = credentials.clientCertificatePem;
  const keyPem = credentials.clientKeyPem;
  if ((certPem === undefined) !== (keyPem === undefined)) {
    throw invalid(
      what,
      certPem === undefined
        ? 'it has a client-key but no client-certificate'
        : 'it has a client-certificate but no client-key',
    );
  }
  if (certPem === undefined || keyPem === undefined) return;
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(certPem);
  } catch {
    throw invalid(what, `${originOf(sources.clientCertificate, 'client-certificate')} is not a PEM certificate`);
  }
  let key;
  try {
    key = createPrivateKey({ key: keyPem, format: 'pem' });
  } catch {
    throw invalid(what, `${originOf(sources.clientKey, 'client-key')} is not a PEM private key`);
  }
  if (!certificate.checkPrivateKey(key)) {
    throw invalid(
      what,
      `${originOf(sources.clientKey, 'client-key')} is not the key of ${originOf(sources.clientCertificate, 'client-certificate')}`,
    );
  }
}

async function resolveSources(
  sources: ContextSources,
  what: string,
  readFile: (path: string) => string | Promise<string>,
): Promise<KubeCredentials> {
  const read = async (source: Source): Promise<string | undefined> =>
    source === undefined ? undefined : 'value' in source ? source.value : readFile(source.file);
  const caPem = await read(sources.ca);
  const token = (await read(sources.token))?.trim();
  const clientCertificatePem = await read(sources.clientCertificate);
  const clientKeyPem = await read(sources.clientKey);
  const credentials: KubeCredentials = {
    server: sources.server,
    contextName: sources.contextName,
    ...(caPem === undefined ? {} : { caPem }),
    ...(token === undefined || token === '' ? {} : { token }),
    ...(clientCertificatePem === undefined ? {} : { clientCertificatePem }),
    ...(clientKeyPem === undefined ? {} : { clientKeyPem }),
    ...(sources.isInsecureSkipTlsVerify ? { isInsecureSkipTlsVerify: true } : {}),
    ...(sources.authPlugin === undefined ? {} : { authPlugin: sources.authPlugin }),
  };
  checkCredentials(credentials, sources, what);
  return credentials;
}

/**
 * Reads a local file the way a kubeconfig and its credentials must be: a
 * regular file (a device such as /dev/zero, a FIFO or a directory is
 * refused before any read, so it can neither hang nor fill memory), at most
 * {@link MAX_KUBECONFIG_FILE_BYTES}, and UTF-8 text.
 */
function readBoundedTextFile(path: string): string {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it has no effect on a regular file.
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  try {
    if (!fstatSync(fd).isFile()) throw new Error('it is not a regular file');
    const buffer = Buffer.alloc(MAX_KUBECONFIG_FILE_BYTES + 1);
    let size = 0;
    for (;;) {
      const count = readSync(fd, buffer, size, buffer.length - size, null);
      if (count === 0) break;
      size += count;
      if (size > MAX_KUBECONFIG_FILE_BYTES) throw new Error(`it is larger than ${MAX_KUBECONFIG_FILE_BYTES} bytes`);
    }
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(buffer.subarray(0, size));
    } catch {
      throw new Error('it is not UTF-8 text');
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * The credentials of a context (the current one by default). File
 * references (`certificate-authority`, `client-certificate`, `client-key`,
 * `tokenFile`) are resolved through `readFile`, so a kubeconfig read from a
 * remote host can be resolved against that host.
 *
 * @throws {EdgeadmError} `E_KUBECONFIG_INVALID` when the context, its
 * cluster or its user is missing, or a file is referred to and no reader given.
 */
export async function kubeCredentialsOf(
  text: string,
  options: {
    what: string;
    context?: string;
    readFile?: (path: string) => Promise<string>;
    /**
     * Reads every file the context refers to at once (from a remote host:
     * one command, not one per file); used instead of `readFile`.
     */
    readFiles?: (paths: string[]) => Promise<Map<string, string>>;
  },
): Promise<KubeCredentials> {
  const sources = contextSources(text, options.what, options.context);
  const referenced = [sources.ca, sources.token, sources.clientCertificate, sources.clientKey].flatMap((source) =>
    source !== undefined && 'file' in source ? [source.file] : [],
  );
  const read = referenced.length > 0 && options.readFiles ? await options.readFiles(referenced) : undefined;
  return resolveSources(sources, options.what, (path) => {
    const found = read?.get(path);
    if (found !== undefined) return found;
    if (!options.readFile) throw invalid(options.what, `it refers to a file (${path}) and no file reader was given`);
    return options.readFile(path);
  });
}

/**
 * Whether a context's credentials refer to files (`certificate-authority`,
 * `client-certificate`, `client-key`, `tokenFile`) rather than holding them
 * inline. Reads nothing.
 *
 * @throws {EdgeadmError} `E_KUBECONFIG_INVALID` when the context, its cluster or its user is missing.
 */
export function kubeconfigRefersToFiles(text: string, what: string, context?: string): boolean {
  const sources = contextSources(text, what, context);
  return [sources.ca, sources.clientCertificate, sources.clientKey, sources.token].some(
    (source) => source !== undefined && 'file' in source,
  );
}

/**
 * The credentials of a kubeconfig file on this machine, with relative file
 * references resolved against the kubeconfig's directory, as kubectl does.
 *
 * @throws {EdgeadmError} `E_KUBECONFIG_INVALID`, or `E_KUBECONFIG_READ` when
 * the kubeconfig or a file it refers to cannot be read.
 */
export async function readKubeconfigFile(path: string, options: { context?: string } = {}): Promise<KubeCredentials> {
  const base = dirname(path);
  const readLocal = (file: string, what: string): string => {
    try {
      return readBoundedTextFile(file);
    } catch (error) {
      throw new EdgeadmError(`cannot read ${what} ${file}: ${(error as Error).message}`, {
        code: 'E_KUBECONFIG_READ',
        exitCode: 3,
        cause: error,
      });
    }
  };
  const readReferenced = (file: string): string =>
    readLocal(isAbsolute(file) ? file : join(base, file), `a file the kubeconfig ${path} refers to:`);
  const text = readLocal(path, 'the kubeconfig');
  // kubectl's reading first: the context must exist (no guessing), names and types as kubectl decodes them.
  const view = resolveKubeconfigView([{ path, text }], { context: options.context, readFile: readReferenced });
  refuseUnsupported(view, path);
  const sources = contextSources(text, path, view.contextName);
  return resolveSources(sources, path, readReferenced);
}

/** What kubectl honours and edgeadm's clients do not: refused, not ignored. */
function refuseUnsupported(view: KubeconfigView, path: string): void {
  const unsupported = (field: string, forward: string): EdgeadmError =>
    new EdgeadmError(`kubeconfig ${path}: ${field} (cluster ${view.cluster?.name}) is not supported by edgeadm`, {
      code: 'E_KUBECONFIG_UNSUPPORTED',
      exitCode: 3,
      hints: [forward],
    });
  if (view.cluster?.proxyUrl !== undefined) {
    throw unsupported('proxy-url', 'edgeadm connects to the API server directly: use a context without proxy-url.');
  }
  if (view.cluster?.tlsServerName !== undefined) {
    throw unsupported(
      'tls-server-name',
      'Point server at a name the API server certificate holds, or use a context without tls-server-name.',
    );
  }
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
