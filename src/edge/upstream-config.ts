/**
 * What the edge-proxy needs to reach its upstream API server, read from a
 * kubeconfig: the server URL, the CA that signs its serving certificate,
 * and the proxy's own credentials (used for the `/readyz` probe only — a
 * client is never proxied with them). Also parses `--client-cert-map`.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { load } from 'js-yaml';
import { ValidationError } from '../errors.js';

/** The proxy's own credentials from the kubeconfig. */
export interface UpstreamCredentials {
  /** Bearer token. A secret: never log it. */
  token?: string;
  certPem?: string;
  /** PEM private key. A secret: never log it. */
  keyPem?: string;
}

/** The upstream API server and how to trust and reach it. */
export interface UpstreamConfig {
  /** `https://host:port[/prefix]`. */
  server: URL;
  caPem: string;
  credentials: UpstreamCredentials;
}

/** One `--client-cert-map` entry: a client certificate CN and the certificate the proxy presents for it upstream. */
export interface ClientCertMapping {
  commonName: string;
  certFile: string;
  keyFile: string;
}

type Named<T> = { name?: unknown } & Partial<Record<'cluster' | 'user' | 'context', T>>;

function invalid(path: string, why: string): ValidationError {
  return new ValidationError(`malformed kubeconfig ${path}: ${why}`, {
    code: 'E_EDGE_KUBECONFIG',
    hints: ['--kubeconfig names the upstream API server, its CA, and the credentials of the readiness probe.'],
  });
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new ValidationError(`cannot read ${what} ${path}: ${(error as Error).message}`, {
      code: 'E_EDGE_FILE',
      cause: error,
    });
  }
}

/** Inline `*-data` (base64) wins over the file form, as kubectl reads it. */
function pemField(entry: Record<string, unknown>, field: string, base: string, what: string): string | undefined {
  const data = entry[`${field}-data`];
  if (typeof data === 'string' && data.trim() !== '') return Buffer.from(data, 'base64').toString('utf8');
  const file = entry[field];
  if (typeof file === 'string' && file !== '') return readText(isAbsolute(file) ? file : join(base, file), what);
  return undefined;
}

/**
 * Reads the current context's cluster and user from the kubeconfig at `path`.
 *
 * @throws {ValidationError} `E_EDGE_KUBECONFIG` when the server is not https,
 * there is no CA, or the context is missing.
 */
export function readUpstreamConfig(path: string): UpstreamConfig {
  const base = dirname(path);
  let document: unknown;
  try {
    document = load(readText(path, 'the kubeconfig'));
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    throw invalid(path, (error as Error).message);
  }
  if (document === null || typeof document !== 'object') throw invalid(path, 'it is not a YAML mapping');
  const config = document as Record<string, unknown>;
  const list = (key: string): Named<Record<string, unknown>>[] =>
    Array.isArray(config[key]) ? (config[key] as Named<Record<string, unknown>>[]) : [];
  const contexts = list('contexts');
  const context =
    contexts.find((item) => item.name === config['current-context'])?.context ??
    (contexts.length === 1 ? contexts[0]?.context : undefined);
  if (!context) throw invalid(path, 'no current context');
  const cluster = list('clusters').find((item) => item.name === context['cluster'])?.cluster;
  if (!cluster) throw invalid(path, `the context names no known cluster`);
  const user = list('users').find((item) => item.name === context['user'])?.user ?? {};
  const server = cluster['server'];
  if (typeof server !== 'string' || !server.startsWith('https://'))
    throw invalid(path, 'the cluster has no https:// server');
  const caPem = pemField(cluster, 'certificate-authority', base, 'the upstream CA');
  if (!caPem) throw invalid(path, 'the cluster has no certificate-authority(-data); the upstream must be verified');
  const credentials: UpstreamCredentials = {};
  if (typeof user['token'] === 'string' && user['token'] !== '') credentials.token = user['token'];
  else if (typeof user['tokenFile'] === 'string')
    credentials.token = readText(user['tokenFile'], 'the token file').trim();
  const certPem = pemField(user, 'client-certificate', base, 'the client certificate');
  const keyPem = pemField(user, 'client-key', base, 'the client key');
  if (certPem && keyPem) {
    credentials.certPem = certPem;
    credentials.keyPem = keyPem;
  }
  return { server: new URL(server), caPem, credentials };
}

/**
 * Parses one `--client-cert-map` value, `CN=certfile,keyfile`.
 *
 * @throws {ValidationError} `E_EDGE_CLIENT_CERT_MAP`.
 */
export function parseClientCertMapping(text: string): ClientCertMapping {
  const match = /^([^=]+)=([^,]+),(.+)$/.exec(text);
  if (!match) {
    throw new ValidationError(`invalid --client-cert-map ${JSON.stringify(text)}: expected CN=certfile,keyfile`, {
      code: 'E_EDGE_CLIENT_CERT_MAP',
      hints: [
        'Example: --client-cert-map system:node:edge-1=/var/lib/kubelet/pki/kubelet-client-current.pem,/var/lib/kubelet/pki/kubelet-client-current.pem',
      ],
    });
  }
  return { commonName: match[1]!.trim(), certFile: match[2]!.trim(), keyFile: match[3]!.trim() };
}

/** A certificate presented upstream for a mapped CN; with its files, it is reloaded when they change. */
export interface UpstreamClientCertificate {
  certPem: string;
  /** PEM private key. A secret: never log it. */
  keyPem: string;
  certFile?: string;
  keyFile?: string;
}

/** Reads the certificate and key of every mapping, keyed by CN. */
export function loadClientCertMappings(mappings: readonly ClientCertMapping[]): Map<string, UpstreamClientCertificate> {
  const loaded = new Map<string, UpstreamClientCertificate>();
  for (const mapping of mappings) {
    loaded.set(mapping.commonName, {
      certPem: readText(mapping.certFile, `the certificate for ${mapping.commonName}`),
      keyPem: readText(mapping.keyFile, `the key for ${mapping.commonName}`),
      certFile: mapping.certFile,
      keyFile: mapping.keyFile,
    });
  }
  return loaded;
}
