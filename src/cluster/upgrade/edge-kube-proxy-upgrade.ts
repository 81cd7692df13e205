/**
 * `upgrade apply` on a kubeadm cluster initialised with `--enable-edge`:
 * `kubeadm upgrade apply` writes kubeadm's kube-proxy DaemonSet again (the
 * new version's image, kubeadm's own spec), which drops its exclusion from
 * edge nodes, so two kube-proxies would program every edge node, one of
 * them past the edge-proxy's site filter. Once the control plane is
 * healthy, kube-proxy is routed again for edge nodes (edge-kube-proxy.ts),
 * which also gives their copy the new version.
 */
import { groupPath } from '../../kube/client.js';
import type { Phase } from '../../workflow/phase.js';
import { EDGE_KUBE_PROXY_NAME, routeEdgeKubeProxy } from '../edge-kube-proxy.js';
import type { UpgradeApplyData } from './upgrade-steps.js';
import { kubeadmAdminClient } from './kubeadm-cluster-objects.js';

/** The phase: only where init made kube-proxy's copy for edge nodes. */
export function edgeKubeProxyUpgradePhase(): Phase<UpgradeApplyData> {
  return {
    name: 'edge-kube-proxy',
    summary: "Edge clusters: keep kubeadm's kube-proxy off edge nodes again, and their copy at the new version",
    runIf: (ctx) => !ctx.isDryRun,
    async run(ctx) {
      const client = await kubeadmAdminClient(ctx.host, ctx.distribution);
      try {
        const edgeCopy = await client.get(
          groupPath('apps/v1', 'daemonsets', { namespace: 'kube-system', name: EDGE_KUBE_PROXY_NAME }),
        );
        if (edgeCopy === undefined) return 'unchanged';
        return await routeEdgeKubeProxy(client, ctx.say);
      } finally {
        client.close();
      }
    },
  };
}
