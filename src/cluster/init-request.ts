/**
 * `edgeadm init`'s one request: built once from the flags and the config
 * file, checked with no I/O, and then passed down as it is. A malformed
 * token, duration, endpoint, address, network, label, key or phase name
 * fails here, with one error code per kind of mistake, before the package is
 * read or any host is reached.
 */
import { isIP } from 'node:net';
import { ValidationError } from '../errors.js';
import { parseBootstrapToken, type BootstrapToken } from '../trust/bootstrap-token.js';
import { parseApiServerAddress } from '../trust/discovery.js';
import { parseGoDuration } from '../trust/duration.js';
import { parseAutonomyDuration, type AutonomyDuration } from '../edge/autonomy.js';
import { resolveInitSettings } from './config.js';
import { parseCertificateKey } from './control-plane-join.js';
import { initPhases } from './init.js';
import { parseNodeRequest, type NodeRequest } from './node-request.js';
import { listFlag, parseRunRequest, type RunFlagValues, type RunRequest } from './run-request.js';

/** Everything an init does, parsed. Secrets in it: the requested token, the certificate key. */
export interface InitRequest extends NodeRequest {
  /** An IP address; the host's first global IPv4 address when absent. */
  advertiseAddress?: string;
  certSans: string[];
  /** One CIDR, or two comma-separated (dual stack). */
  podCidr: string;
  serviceCidr: string;
  enableEdge: boolean;
  /** `--autonomy-duration` (with --enable-edge): the cluster's default for edge nodes; edgeadm's default when absent. */
  autonomyDuration?: AutonomyDuration;
  /** `host` or `host:port`: the shared address of the control planes; starts an HA-capable one. */
  controlPlaneEndpoint?: string;
  /** `--upload-certs` (needs the control-plane endpoint). */
  isUploadCerts: boolean;
  /** `--certificate-key`, 64 hex characters. A secret. */
  certificateKey?: string;
  /** The bootstrap token to create; a new one when absent. */
  requestedToken?: BootstrapToken;
  /** How long the token lives; 0 for ever. */
  tokenTtlMs: number;
  /** Write the admin kubeconfig here (mode 0600). */
  kubeconfigOut?: string;
  /** Merge the admin kubeconfig into this file (unless kubeconfigOut is given). */
  userKubeconfigPath?: string;
  run: RunRequest;
}

/** init's flags as oclif gives them (the names the user typed). */
export interface InitFlagValues extends RunFlagValues {
  distribution?: string | undefined;
  'install-pkg-path'?: string | undefined;
  'node-name'?: string | undefined;
  'node-labels'?: string | undefined;
  'enable-edge'?: boolean | undefined;
  'autonomy-duration'?: string | undefined;
  'apiserver-advertise-address'?: string | undefined;
  'apiserver-cert-extra-sans'?: string[] | undefined;
  'pod-network-cidr'?: string | undefined;
  'service-cidr'?: string | undefined;
  token?: string | undefined;
  'token-ttl'?: string | undefined;
  'kubeconfig-out'?: string | undefined;
  'skip-kubeconfig'?: boolean | undefined;
  'control-plane-endpoint'?: string | undefined;
  'upload-certs'?: boolean | undefined;
  'certificate-key'?: string | undefined;
  'trusted-key'?: string[] | undefined;
}

/** What {@link parseInitRequest} reads. */
export interface InitInput {
  flags: InitFlagValues;
  /** `--config`'s text and name, read by the caller. */
  config?: { configText?: string; configFile?: string };
  /** The kubeconfig init merges into without --kubeconfig-out (`~/.kube/config`). */
  userKubeconfigPath?: string;
  /** `edgeadm init phase <path>`: run only this phase. */
  only?: string | undefined;
}

/**
 * Builds init's request. The trust input (token, its lifetime) is checked
 * first, then the addresses, then the node, then the control-plane flags,
 * then the phase names.
 *
 * @throws {ValidationError} (exit 3), the first mistake only.
 */
export function parseInitRequest(input: InitInput): InitRequest {
  const { flags } = input;
  const settings = resolveInitSettings({
    ...input.config,
    flags: {
      distribution: flags.distribution,
      installPackage: flags['install-pkg-path'],
      nodeName: flags['node-name'],
      advertiseAddress: flags['apiserver-advertise-address'],
      certSans: listFlag(flags['apiserver-cert-extra-sans']),
      podCidr: flags['pod-network-cidr'],
      serviceCidr: flags['service-cidr'],
      enableEdge: flags['enable-edge'] ? true : undefined,
      token: flags.token,
      tokenTtl: flags['token-ttl'],
      trustedKeys: flags['trusted-key'],
    },
  });
  const requestedToken = settings.token ? parseBootstrapToken(settings.token) : undefined;
  const tokenTtlMs = parseTokenTtl(settings.tokenTtl);
  const controlPlaneEndpoint = flags['control-plane-endpoint'];
  if (controlPlaneEndpoint !== undefined) {
    parseApiServerAddress(controlPlaneEndpoint, { isPortRequired: false, what: '--control-plane-endpoint' });
  }
  if (settings.advertiseAddress !== undefined && isIP(settings.advertiseAddress) === 0) {
    throw new ValidationError(
      `--apiserver-advertise-address ${JSON.stringify(settings.advertiseAddress)} is not an IP address`,
      {
        code: 'E_FLAG_INVALID',
        hints: ['The API server advertises an address, not a name: pass an IPv4 or IPv6 address.'],
      },
    );
  }
  checkCidrs(settings.podCidr, '--pod-network-cidr');
  checkCidrs(settings.serviceCidr, '--service-cidr');
  const node = parseNodeRequest({
    distribution: settings.distribution,
    ...(settings.installPackage === undefined ? {} : { installPackage: settings.installPackage }),
    trustedKeys: settings.trustedKeys,
    ...(settings.nodeName === undefined ? {} : { nodeName: settings.nodeName }),
    ...(flags['node-labels'] === undefined ? {} : { nodeLabelsFlag: flags['node-labels'] }),
    nodeLabels: settings.nodeLabels,
  });
  const autonomyDuration = parseEdgeAutonomyFlag(flags['autonomy-duration'], settings.enableEdge);
  const isUploadCerts = flags['upload-certs'] === true;
  if (isUploadCerts && !controlPlaneEndpoint) {
    throw new ValidationError(
      '--upload-certs needs --control-plane-endpoint: only an HA-capable control plane can be joined',
      { code: 'E_FLAG_MISSING' },
    );
  }
  const certificateKey = flags['certificate-key'];
  if (certificateKey) parseCertificateKey(certificateKey);
  const kubeconfigOut = flags['kubeconfig-out'];
  if (kubeconfigOut === '') {
    throw new ValidationError('--kubeconfig-out needs a file name', { code: 'E_FLAG_INVALID' });
  }
  return {
    ...node,
    ...(settings.advertiseAddress === undefined ? {} : { advertiseAddress: settings.advertiseAddress }),
    certSans: settings.certSans,
    podCidr: settings.podCidr,
    serviceCidr: settings.serviceCidr,
    enableEdge: settings.enableEdge,
    ...(autonomyDuration ? { autonomyDuration } : {}),
    ...(controlPlaneEndpoint ? { controlPlaneEndpoint } : {}),
    isUploadCerts,
    ...(certificateKey ? { certificateKey } : {}),
    ...(requestedToken ? { requestedToken } : {}),
    tokenTtlMs,
    ...(kubeconfigOut ? { kubeconfigOut } : {}),
    ...(flags['skip-kubeconfig'] || !input.userKubeconfigPath ? {} : { userKubeconfigPath: input.userKubeconfigPath }),
    run: parseRunRequest(initPhases(), flags, input.only),
  };
}

/**
 * Parses `--autonomy-duration`, which only means something with
 * --enable-edge (init and join share this).
 *
 * @throws {ValidationError} `E_FLAG_MISSING` without --enable-edge;
 * `E_DURATION_INVALID` for a malformed, negative or fractional-second duration.
 */
export function parseEdgeAutonomyFlag(text: string | undefined, enableEdge: boolean): AutonomyDuration | undefined {
  if (text === undefined) return undefined;
  if (!enableEdge) {
    throw new ValidationError(
      '--autonomy-duration needs --enable-edge: it is how long pods on edge nodes stay while cut off',
      {
        code: 'E_FLAG_MISSING',
      },
    );
  }
  return parseAutonomyDuration(text);
}

/**
 * Parses `--token-ttl` (a Go duration; 0 for a token that never expires).
 *
 * @throws {ValidationError} `E_DURATION_INVALID`, for a malformed or negative duration.
 */
export function parseTokenTtl(text: string): number {
  let ms: number;
  try {
    ms = parseGoDuration(text);
  } catch (error) {
    throw new ValidationError(`invalid --token-ttl: ${(error as Error).message}`, {
      code: 'E_DURATION_INVALID',
      hints: (error as ValidationError).hints,
    });
  }
  if (ms < 0) {
    throw new ValidationError(`invalid --token-ttl ${JSON.stringify(text)}: it must not be negative (0 = forever)`, {
      code: 'E_DURATION_INVALID',
    });
  }
  return ms;
}

/** The longest prefix of an address family. */
const MAX_PREFIX: Record<4 | 6, number> = { 4: 32, 6: 128 };

/**
 * Checks a network flag: one CIDR, or an IPv4 and an IPv6 one separated by
 * a comma (dual stack), as k3s and kubeadm take them.
 *
 * @throws {ValidationError} `E_FLAG_INVALID`.
 */
function checkCidrs(text: string, flag: string): void {
  for (const part of text.split(',')) {
    const [address = '', prefix, ...rest] = part.trim().split('/');
    const family = isIP(address);
    const bits = Number(prefix);
    const isValid =
      family !== 0 &&
      rest.length === 0 &&
      prefix !== undefined &&
      /^\d{1,3}$/.test(prefix) &&
      bits <= MAX_PREFIX[family as 4 | 6];
    if (!isValid) {
      throw new ValidationError(
        `${flag} ${JSON.stringify(text)}: ${JSON.stringify(part)} is not a CIDR (address/prefix)`,
        {
          code: 'E_FLAG_INVALID',
          hints: ['For example 10.42.0.0/16, or 10.42.0.0/16,fd00:42::/56 for dual stack.'],
        },
      );
    }
  }
}
