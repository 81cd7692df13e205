/**
 * The kubeconfig that reaches one registered cluster through the hub:
 * server `https://HUB/clusters/NAME`, the hub CA, and the hub user's token.
 * The plain kubectl works with it; `edgeadm kubectl` writes it to a private
 * temporary file for each run.
 */
import { dump } from 'js-yaml';
import type { HubConfig } from '../hub/contract/hub-config.js';

/** Renders the kubeconfig for `cluster`. It holds the user's token: a credential. */
export function renderClusterKubeconfig(config: HubConfig, cluster: string): string {
  const name = `edgeadm-hub-${cluster}`;
  const user = config.user === '' ? 'hub-user' : config.user;
  return dump({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name,
        cluster: {
          server: `${config.server}/clusters/${cluster}`,
          'certificate-authority-data': Buffer.from(config.caPem, 'utf8').toString('base64'),
        },
      },
    ],
    users: [{ name: `${user}@${name}`, user: { token: config.token } }],
    contexts: [{ name, context: { cluster: name, user: `${user}@${name}` } }],
    'current-context': name,
    preferences: {},
  });
}
