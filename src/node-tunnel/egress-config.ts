/**
 * The kube-apiserver side of init: the EgressSelectorConfiguration that
 * sends the API server's `cluster` egress (kubelets, proxy subresources,
 * webhooks, aggregated APIs) to the node tunnel's Unix socket, and the
 * flag and volume kubeadm gives the API server's static pod for it.
 *
 * Pure: no I/O.
 */
import { dump } from 'js-yaml';
import { EGRESS_CONFIG_PATH, EGRESS_DIR, EGRESS_SOCKET_PATH } from './limits.js';

/** The configuration file's text. */
export function renderEgressSelectorConfiguration(socketPath: string = EGRESS_SOCKET_PATH): string {
  const document = {
    apiVersion: 'apiserver.k8s.io/v1beta1',
    kind: 'EgressSelectorConfiguration',
    egressSelections: [
      {
        name: 'cluster',
        connection: { proxyProtocol: 'HTTPConnect', transport: { uds: { udsName: socketPath } } },
      },
    ],
  };
  return `# Written by edgeadm init --enable-edge: the API server reaches edge nodes' kubelets through edgeadm's node tunnel.\n${dump(document, { lineWidth: -1 })}`;
}

/** What kubeadm's ClusterConfiguration adds to the API server for the egress selector. */
export interface ApiServerEgress {
  extraArgs: Array<{ name: string; value: string }>;
  extraVolumes: Array<{ name: string; hostPath: string; mountPath: string; readOnly: boolean; pathType: string }>;
}

/** The API server's flag and the directory (configuration and socket) mounted into its static pod. */
export function apiServerEgress(): ApiServerEgress {
  return {
    extraArgs: [{ name: 'egress-selector-config-file', value: EGRESS_CONFIG_PATH }],
    // Not read-only: the API server connects to the socket in it.
    extraVolumes: [
      {
        name: 'edgeadm-egress',
        hostPath: EGRESS_DIR,
        mountPath: EGRESS_DIR,
        readOnly: false,
        pathType: 'DirectoryOrCreate',
      },
    ],
  };
}
