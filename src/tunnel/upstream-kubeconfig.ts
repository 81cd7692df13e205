/**
 * The agent's upstream kubeconfig: where the cluster's API server is and the
 * credentials the agent reaches it with (a bearer token or a client
 * certificate), read once through edgeadm's one kubeconfig reader.
 */
import { ValidationError } from '../errors.js';
import { readKubeconfigFile, type KubeCredentials } from '../kube/kubeconfig.js';

/** Where the cluster's API server is and how the agent authenticates to it. Holds credentials. */
export interface UpstreamCredentials {
  /** `https://host:port`, without a path. */
  server: string;
  caPem?: string | undefined;
  isInsecureSkipTlsVerify: boolean;
  token?: string | undefined;
  clientCertPem?: string;
  clientKeyPem?: string;
}

/**
 * Reads the current context of a kubeconfig file into upstream credentials
 * (through edgeadm's one kubeconfig reader, `readKubeconfigFile`). Supports
 * CA and client certificate data or files, bearer tokens and token files;
 * exec and auth-provider plugins are refused.
 *
 * @throws {ValidationError} `E_UPSTREAM_KUBECONFIG`.
 */
export async function readUpstreamKubeconfig(path: string): Promise<UpstreamCredentials> {
  const invalid = (why: string): ValidationError =>
    new ValidationError(`the kubeconfig ${path} cannot be used: ${why}`, {
      code: 'E_UPSTREAM_KUBECONFIG',
      hints: [
        'Pass --kubeconfig with a kubeconfig whose current context reaches the cluster with a token or a client certificate.',
      ],
    });
  let read: KubeCredentials;
  try {
    read = await readKubeconfigFile(path);
  } catch (error) {
    throw invalid((error as Error).message);
  }
  let url: URL;
  try {
    url = new URL(read.server);
  } catch {
    throw invalid(`the server ${JSON.stringify(read.server)} is not a URL`);
  }
  if (url.protocol !== 'https:') throw invalid('the server is not https://');
  if (read.authPlugin !== undefined) {
    throw invalid('exec and auth-provider credentials are not supported; use a token or a client certificate');
  }
  const credentials: UpstreamCredentials = {
    server: url.origin,
    isInsecureSkipTlsVerify: read.isInsecureSkipTlsVerify === true,
  };
  if (read.caPem !== undefined) credentials.caPem = read.caPem;
  if (read.token !== undefined) credentials.token = read.token;
  if (read.clientCertificatePem !== undefined && read.clientKeyPem !== undefined) {
    credentials.clientCertPem = read.clientCertificatePem;
    credentials.clientKeyPem = read.clientKeyPem;
  }
  if (credentials.token === undefined && credentials.clientCertPem === undefined) {
    throw invalid('the current user has neither a token nor a client certificate');
  }
  return credentials;
}
