/**
 * The `edgeadm register-cloud …` command that `hub token create` prints.
 * Pure: no I/O.
 */
import type { CreatedHubToken } from './hub-client.js';

/**
 * What stands for the cluster name when none is given: register-cloud
 * refuses it (a cluster name is a lower-case DNS label), so a command
 * copied without filling it in registers nothing under a wrong name.
 */
export const CLUSTER_NAME_PLACEHOLDER = 'CLUSTER_NAME';

/** The register-cloud command for a new hub token, with every required flag. */
export function renderRegisterCloudCommand(created: CreatedHubToken, clusterName?: string): string {
  return [
    'edgeadm register-cloud',
    created.hub,
    '--token',
    created.token,
    '--hub-ca-cert-hash',
    created.caCertHash,
    '--name',
    clusterName ?? CLUSTER_NAME_PLACEHOLDER,
  ].join(' ');
}
