/**
 * `edgeadm join`'s one request: built once from the flags and the config
 * file, checked with no I/O, and then passed down as it is. A malformed
 * token, pin, endpoint, duration, label, site, key or phase name fails here, with
 * one error code per kind of mistake, before the package is read or any
 * host is reached; the layers below take the parsed types and do not check
 * them again.
 */
import { ValidationError } from '../errors.js';
import { parseDiscoveryRequest, parseDiscoveryTimeout, type DiscoveryRequest } from '../trust/discovery.js';
import { resolveJoinSettings } from './config.js';
import { parseCertificateKey } from './control-plane-join.js';
import type { AutonomyDuration } from '../edge/autonomy.js';
import { parseEdgeAutonomyFlag } from './init-request.js';
import { joinPhases } from './join.js';
import { parseNodeRequest, type NodeRequest } from './node-request.js';
import { parseRunRequest, type RunFlagValues, type RunRequest } from './run-request.js';
import { withSiteLabels } from '../sites/site-label.js';

/** Everything a join does, parsed. Secrets in it: the token, the certificate key. */
export interface JoinRequest extends NodeRequest {
  /** The API server, the token and the pins discovery runs on. */
  discovery: DiscoveryRequest;
  /** Edge autonomy on this node (a worker only). */
  enableEdge: boolean;
  /** `--autonomy-duration` (with --enable-edge): this node's; the cluster's default when absent. */
  autonomyDuration?: AutonomyDuration;
  /** `--control-plane`: join another control plane (HA), not a node. */
  isControlPlane: boolean;
  /** `--certificate-key` (64 hex characters), given with --control-plane. A secret. */
  certificateKey?: string;
  run: RunRequest;
}

/** join's flags as oclif gives them (the names the user typed). */
export interface JoinFlagValues extends RunFlagValues {
  token?: string | undefined;
  'discovery-token-ca-cert-hash'?: string[] | undefined;
  'discovery-token-unsafe-skip-ca-verification'?: boolean | undefined;
  'discovery-timeout'?: string | undefined;
  distribution?: string | undefined;
  'install-pkg-path'?: string | undefined;
  'node-name'?: string | undefined;
  'node-labels'?: string | undefined;
  /** `--site NAME`: the node's site (labels `edgeadm.io/site` and the zone). */
  site?: string | undefined;
  'enable-edge'?: boolean | undefined;
  'autonomy-duration'?: string | undefined;
  'control-plane'?: boolean | undefined;
  'certificate-key'?: string | undefined;
  'trusted-key'?: string[] | undefined;
}

/** What {@link parseJoinRequest} reads. */
export interface JoinInput {
  /** The endpoint argument. */
  endpoint?: string | undefined;
  flags: JoinFlagValues;
  /** `--config`'s text and name, read by the caller. */
  config?: { configText?: string; configFile?: string };
  /** `edgeadm join phase <path>`: run only this phase. */
  only?: string | undefined;
}

/**
 * Builds join's request. The checks run in the order a user fixes them:
 * what is missing, then the trust input (token, pins, timeout, endpoint),
 * then the node, then the control-plane flags, then the phase names.
 *
 * @throws {ValidationError} (exit 3), the first mistake only.
 */
export function parseJoinRequest(input: JoinInput): JoinRequest {
  const { flags } = input;
  const settings = resolveJoinSettings({
    ...input.config,
    flags: {
      endpoint: input.endpoint,
      token: flags.token,
      caCertHashes: flags['discovery-token-ca-cert-hash'],
      unsafeSkipCaVerification: flags['discovery-token-unsafe-skip-ca-verification'] ? true : undefined,
      discoveryTimeout: flags['discovery-timeout'],
      installPackage: flags['install-pkg-path'],
      trustedKeys: flags['trusted-key'],
      nodeName: flags['node-name'],
      enableEdge: flags['enable-edge'] ? true : undefined,
    },
  });
  if (!settings.endpoint || !settings.token) {
    const missing = [
      ...(settings.endpoint ? [] : ['the API server endpoint (host:port)']),
      ...(settings.token ? [] : ['--token']),
    ];
    throw new ValidationError(`join needs ${missing.join(' and ')}`, {
      code: 'E_FLAG_MISSING',
      hints: ['"edgeadm token create --print-join-command" on the control plane prints a whole join command.'],
    });
  }
  const discovery = parseDiscoveryRequest({
    endpoint: settings.endpoint,
    token: settings.token,
    caCertHashes: settings.caCertHashes,
    isUnsafeSkipCaVerification: settings.unsafeSkipCaVerification,
    timeoutMs: parseDiscoveryTimeout(settings.discoveryTimeout),
  });
  const parsedNode = parseNodeRequest({
    distribution: flags.distribution ?? 'k3s',
    ...(settings.installPackage === undefined ? {} : { installPackage: settings.installPackage }),
    trustedKeys: settings.trustedKeys,
    ...(settings.nodeName === undefined ? {} : { nodeName: settings.nodeName }),
    ...(flags['node-labels'] === undefined ? {} : { nodeLabelsFlag: flags['node-labels'] }),
    nodeLabels: settings.nodeLabels,
  });
  // The site is checked before any I/O like every other flag; it adds the site's two labels.
  const node = { ...parsedNode, nodeLabels: withSiteLabels(parsedNode.nodeLabels, flags.site) };
  const autonomyDuration = parseEdgeAutonomyFlag(flags['autonomy-duration'], settings.enableEdge);
  const isControlPlane = flags['control-plane'] === true;
  const certificateKey = flags['certificate-key'];
  if (isControlPlane) {
    if (!certificateKey) {
      throw new ValidationError('join --control-plane needs --certificate-key', {
        code: 'E_FLAG_MISSING',
        hints: [
          'edgeadm init --control-plane-endpoint … --upload-certs prints it with the control-plane join command.',
        ],
      });
    }
    parseCertificateKey(certificateKey);
    if (settings.enableEdge) {
      throw new ValidationError('--control-plane and --enable-edge do not go together: edge nodes are workers', {
        code: 'E_FLAG_CONFLICT',
      });
    }
  }
  return {
    ...node,
    discovery,
    enableEdge: settings.enableEdge,
    ...(autonomyDuration ? { autonomyDuration } : {}),
    isControlPlane,
    ...(isControlPlane && certificateKey ? { certificateKey } : {}),
    run: parseRunRequest(joinPhases(), flags, input.only),
  };
}
