/**
 * The flags for more control planes (HA), kubeadm's names: init's
 * `--control-plane-endpoint`, `--upload-certs` and `--certificate-key`,
 * join's `--control-plane` and `--certificate-key`. init's and join's
 * requests (cluster/init-request.ts, cluster/join-request.ts) check them.
 */
import { Flags } from '@oclif/core';

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
