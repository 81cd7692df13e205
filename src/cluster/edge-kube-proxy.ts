/**
 * init's edge-kube-proxy phase (with --enable-edge, on a cluster whose
 * kube-proxy is a DaemonSet, as kubeadm installs it): kube-proxy on edge
 * nodes talks to the API server through the node's edge-proxy, so that
 * the edge-proxy can keep a grid Service's endpoints inside the node's site
 * (src/sites/endpoint-filter.ts), and so that kube-proxy is served from the
 * proxy's cache while the site is cut off.
 *
 * kubeadm's DaemonSet `kube-proxy` is kept off edge nodes (node affinity:
 * no `edgeadm.io/edge` label), and a copy, `kube-proxy-edge`, runs on them
 * with a kubeconfig naming the edge-proxy (`https://127.0.0.1:10261`,
 * kube-proxy is on the host network) and trusting the proxy's serving CA
 * (mounted from the node). Same image, same configuration, same service
 * account token: the API server still decides what kube-proxy may read.
 *
 * k3s runs kube-proxy inside its agent, whose load balancer already leads
 * to the edge-proxy (src/edge/README.md, "k3s agents"); no DaemonSet, so
 * nothing to do there.
 */
import type { KubeClient, KubeObject } from '../kube/client.js';
import { corePath, groupPath } from '../kube/client.js';
import type { Phase, PhaseOutcome } from '../workflow/phase.js';
import { EDGE_PROXY_SERVING_CA, EDGE_PROXY_URL } from './edge-node-phase.js';
import { EDGE_NODE_LABEL } from './edge-settings.js';
import { applyObjects, describeObject } from './manifests.js';
import type { NodeData } from './node-context.js';

/** The DaemonSet and ConfigMap of kube-proxy on edge nodes. */
export const EDGE_KUBE_PROXY_NAME = 'kube-proxy-edge';
const CA_VOLUME = 'edgeadm-edge-proxy-ca';

interface DaemonSetLike extends KubeObject {
  spec: {
    selector: { matchLabels: Record<string, string> };
    template: {
      metadata: { labels: Record<string, string> };
      spec: {
        nodeSelector?: Record<string, string>;
        volumes?: Array<{ name: string; configMap?: { name: string }; [key: string]: unknown }>;
        containers: Array<{ volumeMounts?: Array<Record<string, unknown>>; [key: string]: unknown }>;
        [key: string]: unknown;
      };
    };
    [key: string]: unknown;
  };
}

/** kube-proxy's kubeconfig with the edge-proxy as its server and the proxy's CA. Pure. */
export function edgeKubeProxyKubeconfig(text: string): string {
  return text
    .replace(/^(\s*server:\s*).*$/m, `$1${EDGE_PROXY_URL}`)
    .replace(/^(\s*certificate-authority:\s*).*$/m, `$1${EDGE_PROXY_SERVING_CA}`);
}

/**
 * The objects of kube-proxy on edge nodes, from kubeadm's: its ConfigMap
 * and DaemonSet copied for edge nodes, and kubeadm's DaemonSet kept off
 * them. Pure.
 */
export function edgeKubeProxyObjects(daemonSet: DaemonSetLike, configMap: KubeObject): KubeObject[] {
  const data = configMap.data as Record<string, string>;
  const labels = { 'app.kubernetes.io/managed-by': 'edgeadm', 'k8s-app': EDGE_KUBE_PROXY_NAME };
  const template = daemonSet.spec.template;
  const edgeConfigMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: EDGE_KUBE_PROXY_NAME, namespace: 'kube-system', labels },
    data: { ...data, 'kubeconfig.conf': edgeKubeProxyKubeconfig(data['kubeconfig.conf'] ?? '') },
  };
  const volumes = (template.spec.volumes ?? []).map((volume) =>
    volume.configMap?.name === configMap.metadata?.name
      ? { ...volume, configMap: { ...volume.configMap, name: EDGE_KUBE_PROXY_NAME } }
      : volume,
  );
  const edgeDaemonSet = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: EDGE_KUBE_PROXY_NAME, namespace: 'kube-system', labels },
    spec: {
      selector: { matchLabels: { 'k8s-app': EDGE_KUBE_PROXY_NAME } },
      template: {
        metadata: { labels: { ...template.metadata.labels, 'k8s-app': EDGE_KUBE_PROXY_NAME } },
        spec: {
          ...template.spec,
          nodeSelector: { ...template.spec.nodeSelector, [EDGE_NODE_LABEL]: 'true' },
          volumes: [...volumes, { name: CA_VOLUME, hostPath: { path: EDGE_PROXY_SERVING_CA, type: 'File' } }],
          containers: template.spec.containers.map((container) => ({
            ...container,
            volumeMounts: [
              ...(container.volumeMounts ?? []),
              { name: CA_VOLUME, mountPath: EDGE_PROXY_SERVING_CA, readOnly: true },
            ],
          })),
        },
      },
    },
  };
  const offEdge = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'kube-proxy', namespace: 'kube-system' },
    spec: {
      selector: daemonSet.spec.selector,
      template: {
        metadata: { labels: template.metadata.labels },
        spec: {
          containers: template.spec.containers.map((c) => ({ name: c.name })),
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchExpressions: [{ key: EDGE_NODE_LABEL, operator: 'DoesNotExist' }] }],
              },
            },
          },
        },
      },
    },
  };
  return [edgeConfigMap, edgeDaemonSet, offEdge];
}

/** What the phase needs of the init workflow. */
export interface EdgeKubeProxyData extends NodeData {
  enableEdge: boolean;
}

/** Makes the edge-kube-proxy phase. */
export function edgeKubeProxyPhase<C extends EdgeKubeProxyData>(deps: {
  adminClient: (ctx: C) => Promise<KubeClient>;
}): Phase<C> {
  return {
    name: 'edge-kube-proxy',
    summary: "With --enable-edge (kubeadm): kube-proxy on edge nodes through the node's edge-proxy",
    runIf: (ctx) => ctx.enableEdge && ctx.distribution.name === 'kubeadm',
    async run(ctx) {
      if (ctx.isDryRun) {
        ctx.say(`Would run kube-proxy on edge nodes as ${EDGE_KUBE_PROXY_NAME}, through ${EDGE_PROXY_URL}`);
        return 'unchanged';
      }
      return routeEdgeKubeProxy(await deps.adminClient(ctx), ctx.say);
    },
  };
}

/**
 * Applies kube-proxy's objects for edge nodes from kubeadm's DaemonSet and
 * ConfigMap as they are now (init; again after `kubeadm upgrade apply`
 * rewrote kubeadm's DaemonSet, its image and its affinity).
 */
export async function routeEdgeKubeProxy(client: KubeClient, say: (line: string) => void): Promise<PhaseOutcome> {
  const daemonSet = await client.get<DaemonSetLike>(
    groupPath('apps/v1', 'daemonsets', { namespace: 'kube-system', name: 'kube-proxy' }),
  );
  const configMap = await client.get(corePath('configmaps', { namespace: 'kube-system', name: 'kube-proxy' }));
  if (daemonSet === undefined || configMap === undefined) {
    say('no kube-proxy DaemonSet in kube-system: nothing to route');
    return 'unchanged';
  }
  const objects = edgeKubeProxyObjects(daemonSet, configMap);
  const changed = await applyObjects(client, objects);
  for (const object of objects)
    say(`${changed.includes(object) ? 'applied' : 'already applied'} ${describeObject(object)}`);
  return changed.length > 0 ? 'changed' : 'unchanged';
}
