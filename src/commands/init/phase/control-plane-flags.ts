/**
 * The flags for more control planes (HA), kubeadm's names: init's
 * `--control-plane-endpoint`, `--upload-certs` and `--certificate-key`,
 * join's `--control-plane` and `--certificate-key`, and their translation
 * into workflow options.
 */
import { Flags } from '@oclif/core';
import { parseCertificateKey } from '../../../cluster/control-plane-join.js';
import { ValidationError } from '../../../errors.js';

const helpGroup = 'CONTROL PLANE';

/** init's flags. */
export const controlPlaneInitFlags = {
  'control-plane-endpoint': Flags.string({
    summary:
      'The shared address (host or host:port) of all control planes; starts an HA-capable one (k3s: embedded etcd, cluster-init; kubeadm: ClusterConfiguration.controlPlaneEndpoint).',
    helpGroup,
  }),
  'upload-certs': Flags.boolean({
    summary:
      'Keep what another control plane needs in the cluster, encrypted with the certificate key, and print the control-plane join command.',
    helpGroup,
  }),
  'certificate-key': Flags.string({
    summary: 'The key (64 hex characters) --upload-certs encrypts with; default: a new one.',
    helpGroup,
  }),
};

/** join's flags. */
export const controlPlaneJoinFlags = {
  'control-plane': Flags.boolean({ summary: 'Join another control plane (HA), not a node.', helpGroup }),
  'certificate-key': Flags.string({
    summary: 'The key init --upload-certs printed; decrypts what another control plane needs.',
    helpGroup,
  }),
};

/**
 * init's options from its flags.
 *
 * @throws {ValidationError} for --upload-certs without --control-plane-endpoint, or a malformed key.
 */
export function controlPlaneInitOptions(flags: {
  'control-plane-endpoint'?: string;
  'upload-certs'?: boolean;
  'certificate-key'?: string;
}): { controlPlaneEndpoint?: string; isUploadCerts?: boolean; certificateKey?: string } {
  if (flags['upload-certs'] && !flags['control-plane-endpoint']) {
    throw new ValidationError(
      '--upload-certs needs --control-plane-endpoint: only an HA-capable control plane can be joined',
      {
        code: 'E_FLAG_MISSING',
      },
    );
  }
  if (flags['certificate-key']) parseCertificateKey(flags['certificate-key']);
  return {
    ...(flags['control-plane-endpoint'] ? { controlPlaneEndpoint: flags['control-plane-endpoint'] } : {}),
    ...(flags['upload-certs'] ? { isUploadCerts: true } : {}),
    ...(flags['certificate-key'] ? { certificateKey: flags['certificate-key'] } : {}),
  };
}

/**
 * join's options from its flags.
 *
 * @throws {ValidationError} for --control-plane without a well-formed --certificate-key.
 */
export function controlPlaneJoinOptions(flags: { 'control-plane'?: boolean; 'certificate-key'?: string }): {
  isControlPlane?: boolean;
  certificateKey?: string;
} {
  if (!flags['control-plane']) return {};
  if (!flags['certificate-key']) {
    throw new ValidationError('join --control-plane needs --certificate-key', {
      code: 'E_FLAG_MISSING',
      hints: ['edgeadm init --control-plane-endpoint … --upload-certs prints it with the control-plane join command.'],
    });
  }
  parseCertificateKey(flags['certificate-key']);
  return { isControlPlane: true, certificateKey: flags['certificate-key'] };
}
