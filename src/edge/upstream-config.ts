/**
 * What the edge-proxy needs to reach its upstream API server, read from a
 * kubeconfig: the server URL, the CA that signs its serving certificate,
 * and the proxy's own credentials (used for the `/readyz` probe only — a
 * client is never proxied with them). Also parses `--client-cert-map`.
 */
import { readFileSync } from 'node:fs';
import { ValidationError, isEdgeadmError } from '../errors.js';
import { readKubeconfigFile, type KubeCredentials } from '../kube/kubeconfig.js';

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

/**
 * Reads the current context's cluster and user from the kubeconfig at `path`
 * (edgeadm's one kubeconfig reader, `readKubeconfigFile`), and checks what
 * the proxy needs of it: an https server and a CA to verify it with.
 *
 * @throws {ValidationError} `E_EDGE_KUBECONFIG` when the server is not https,
 * there is no CA, or the context is missing.
 */
export async function readUpstreamConfig(path: string): Promise<UpstreamConfig> {
  let read: KubeCredentials;
  try {
    read = await readKubeconfigFile(path);
  } catch (error) {
    if (isEdgeadmError(error) && error.code === 'E_KUBECONFIG_READ') {
      throw new ValidationError(error.message, { code: 'E_EDGE_FILE', cause: error });
    }
    throw invalid(path, (error as Error).message);
  }
  if (!read.server.startsWith('https://')) throw invalid(path, 'the cluster has no https:// server');
  if (!read.caPem)
    throw invalid(path, 'the cluster has no certificate-authority(-data); the upstream must be verified');
  const credentials: UpstreamCredentials = {};
  if (read.token) credentials.token = read.token;
  if (read.clientCertificatePem && read.clientKeyPem) {
    credentials.certPem = read.clientCertificatePem;
    credentials.keyPem = read.clientKeyPem;
  }
  return { server: new URL(read.server), caPem: read.caPem, credentials };
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
