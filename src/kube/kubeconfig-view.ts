/**
 * Kubeconfig files read as kubectl reads them, to the one context a command
 * uses: what `KUBECONFIG=a:b kubectl config view --minify --raw --flatten
 * [--context NAME]` prints (client-go's clientcmd loading rules).
 *
 * - Several files: for each cluster, user and context name the first file
 *   that has it wins, whole; `current-context` comes from the first file that
 *   sets one. A file that does not exist is skipped; a name written twice in
 *   one file, or a field of the wrong type, refuses the load.
 * - YAML as kubectl reads it (go-yaml v2, YAML 1.1: `y` and `yes` are
 *   booleans, so `name: y` is not a name).
 * - The context is `--context` or `current-context`, and must exist, with
 *   the cluster and user it names (kubectl's "cannot locate …").
 * - `certificate-authority`, `client-certificate` and `client-key` are read
 *   relative to the file that names them, and a field given both as a path
 *   and as `-data` is refused (kubectl's "cannot have values for both path
 *   and contents").
 *
 * Pure: files are read through the function given. Fields a file does not
 * set are undefined.
 */
import { YAML11_SCHEMA, load } from 'js-yaml';
import { posix } from 'node:path';
import { EdgeadmError } from '../errors.js';

/** One kubeconfig file: its path (absolute, or as given) and its text, or undefined when it does not exist. */
export interface KubeconfigFile {
  path: string;
  text: string | undefined;
}

/** The selected context, its cluster and its user, as `config view --minify --flatten` shows them. */
export interface KubeconfigView {
  contextName: string;
  namespace?: string | undefined;
  cluster?: {
    name: string;
    server?: string | undefined;
    /** certificate-authority(-data), as text. */
    certificateAuthority?: string | undefined;
    isInsecureSkipTlsVerify: boolean;
    tlsServerName?: string | undefined;
    proxyUrl?: string | undefined;
  };
  user?: {
    name: string;
    token?: string | undefined;
    /** As written (kubectl does not resolve it in the view). */
    tokenFile?: string | undefined;
    /** Where tokenFile is read from (relative to its kubeconfig). */
    tokenFilePath?: string | undefined;
    clientCertificate?: string | undefined;
    clientKey?: string | undefined;
    hasExec: boolean;
    hasAuthProvider: boolean;
  };
}

interface Origin<T> {
  value: T;
  /** The file the entry came from. */
  file: string;
}

function kubeconfigError(message: string, hints: string[] = []): EdgeadmError {
  return new EdgeadmError(message, {
    code: 'E_KUBECONFIG_INVALID',
    exitCode: 3,
    hints: hints.length > 0 ? hints : ['kubectl refuses it too: check it with "kubectl config view --minify".'],
  });
}

type Mapping = Record<string, unknown>;

function isMapping(value: unknown): value is Mapping {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A string field, or undefined when absent; any other type is refused, as kubectl's decoder refuses it. */
function stringOf(entry: Mapping, key: string, where: string): string | undefined {
  const value = entry[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw kubeconfigError(`${where}: ${key} must be a string, not ${typeof value}`);
  return value === '' ? undefined : value;
}

function booleanOf(entry: Mapping, key: string, where: string): boolean {
  const value = entry[key];
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw kubeconfigError(`${where}: ${key} must be true or false`);
  return value;
}

/** base64 `-data`, decoded (kubectl's []byte fields). */
function dataOf(entry: Mapping, key: string, where: string): string | undefined {
  const text = stringOf(entry, key, where);
  if (text === undefined) return undefined;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text.replace(/\s/g, ''))) throw kubeconfigError(`${where}: ${key} is not base64`);
  return Buffer.from(text, 'base64').toString('utf8');
}

/** One file's named entries, checked as clientcmd's conversion checks them. */
function namedEntries(document: Mapping, list: string, field: string, file: string): Map<string, Mapping> {
  const entries = new Map<string, Mapping>();
  const value = document[list];
  if (value === undefined || value === null) return entries;
  if (!Array.isArray(value)) throw kubeconfigError(`${file}: ${list} must be a list`);
  for (const item of value) {
    if (!isMapping(item)) throw kubeconfigError(`${file}: an entry of ${list} is not a mapping`);
    const name = item.name ?? '';
    if (typeof name !== 'string') throw kubeconfigError(`${file}: a name in ${list} is not a string (${String(name)})`);
    if (entries.has(name)) throw kubeconfigError(`${file}: duplicate name "${name}" in ${list}`);
    const body = item[field] ?? {};
    if (!isMapping(body)) throw kubeconfigError(`${file}: ${list} entry "${name}" has no ${field} mapping`);
    entries.set(name, body);
  }
  return entries;
}

/**
 * Merges `files` (in KUBECONFIG order) and resolves the context, reading
 * certificate files through `readFile` (a path relative to its kubeconfig is
 * resolved against that file's directory).
 *
 * @throws {EdgeadmError} `E_KUBECONFIG_INVALID` where kubectl fails.
 */
export function resolveKubeconfigView(
  files: KubeconfigFile[],
  options: { context?: string | undefined; readFile: (path: string) => string },
): KubeconfigView {
  const clusters = new Map<string, Origin<Mapping>>();
  const users = new Map<string, Origin<Mapping>>();
  const contexts = new Map<string, Origin<Mapping>>();
  let currentContext: string | undefined;
  const seen = new Set<string>();
  for (const { path, text } of files) {
    if (path === '' || seen.has(path) || text === undefined) continue;
    seen.add(path);
    let document: unknown;
    try {
      document = text.trim() === '' ? {} : load(text, { schema: YAML11_SCHEMA, filename: path });
    } catch (error) {
      throw kubeconfigError(`error loading config file "${path}": ${(error as Error).message}`);
    }
    if (document === null || document === undefined) continue;
    if (!isMapping(document)) throw kubeconfigError(`error loading config file "${path}": it is not a YAML mapping`);
    const add = (target: Map<string, Origin<Mapping>>, list: string, field: string): void => {
      for (const [name, value] of namedEntries(document, list, field, path)) {
        if (!target.has(name)) target.set(name, { value, file: path });
      }
    };
    add(clusters, 'clusters', 'cluster');
    add(users, 'users', 'user');
    add(contexts, 'contexts', 'context');
    currentContext ??= stringOf(document, 'current-context', path);
  }
  const contextName = options.context === undefined || options.context === '' ? currentContext : options.context;
  if (contextName === undefined) {
    throw kubeconfigError('current-context must exist in order to minify', [
      'Set current-context in the kubeconfig (kubectl config use-context NAME), or name one with --context.',
    ]);
  }
  const context = contexts.get(contextName);
  if (context === undefined) throw kubeconfigError(`cannot locate context ${contextName}`);
  const where = `context ${contextName}`;
  const clusterName = stringOf(context.value, 'cluster', where);
  const userName = stringOf(context.value, 'user', where);
  const namespace = stringOf(context.value, 'namespace', where);
  const view: KubeconfigView = { contextName, namespace };
  /** A path-or-data field, flattened: the file's text (relative to `origin`), or the decoded data. */
  const flattened = (entry: Mapping, key: string, origin: string, owner: string): string | undefined => {
    const path = stringOf(entry, key, owner);
    const data = dataOf(entry, `${key}-data`, owner);
    if (path === undefined) return data;
    if (data !== undefined) {
      throw kubeconfigError(`${owner}: cannot have values for both path and contents (${key} and ${key}-data)`, [
        `Keep one of ${key} and ${key}-data.`,
      ]);
    }
    return options.readFile(posix.isAbsolute(path) ? path : posix.join(posix.dirname(origin), path));
  };
  if (clusterName !== undefined) {
    const cluster = clusters.get(clusterName);
    if (cluster === undefined) throw kubeconfigError(`cannot locate cluster ${clusterName}`);
    const owner = `cluster ${clusterName}`;
    const server = stringOf(cluster.value, 'server', owner);
    const certificateAuthority = flattened(cluster.value, 'certificate-authority', cluster.file, owner);
    const tlsServerName = stringOf(cluster.value, 'tls-server-name', owner);
    const proxyUrl = stringOf(cluster.value, 'proxy-url', owner);
    view.cluster = {
      name: clusterName,
      server,
      certificateAuthority,
      isInsecureSkipTlsVerify: booleanOf(cluster.value, 'insecure-skip-tls-verify', owner),
      tlsServerName,
      proxyUrl,
    };
  }
  if (userName !== undefined) {
    const user = users.get(userName);
    if (user === undefined) throw kubeconfigError(`cannot locate user ${userName}`);
    const owner = `user ${userName}`;
    const token = stringOf(user.value, 'token', owner);
    const tokenFile = stringOf(user.value, 'tokenFile', owner);
    const clientCertificate = flattened(user.value, 'client-certificate', user.file, owner);
    const clientKey = flattened(user.value, 'client-key', user.file, owner);
    view.user = {
      name: userName,
      token,
      tokenFile,
      tokenFilePath:
        tokenFile === undefined || posix.isAbsolute(tokenFile)
          ? tokenFile
          : posix.join(posix.dirname(user.file), tokenFile),
      clientCertificate,
      clientKey,
      hasExec: isMapping(user.value.exec),
      hasAuthProvider: isMapping(user.value['auth-provider']),
    };
  }
  return view;
}
