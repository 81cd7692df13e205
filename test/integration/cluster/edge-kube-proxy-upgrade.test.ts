/**
 * After `kubeadm upgrade apply` wrote kubeadm's kube-proxy DaemonSet again
 * (a new image, no edge-node exclusion), kube-proxy is routed for edge
 * nodes again (src/cluster/edge-kube-proxy.ts, run by `upgrade apply`'s
 * edge-kube-proxy phase): kubeadm's DaemonSet is kept off edge nodes and
 * their copy runs the new image. The API server is the SIMULATED one of
 * test/support (DaemonSets and ConfigMaps stored and applied server-side).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EDGE_KUBE_PROXY_NAME, routeEdgeKubeProxy } from '../../../src/cluster/edge-kube-proxy.js';
import { KubeClient, type KubeObject } from '../../../src/kube/client.js';
import { startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';

let server: SimApiServer;
let client: KubeClient;

/** kubeadm's kube-proxy DaemonSet at `version`, as `kubeadm upgrade apply` writes it (no affinity). */
function kubeadmKubeProxy(version: string): Parameters<SimApiServer['setObject']>[0] {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'kube-proxy', namespace: 'kube-system' },
    spec: {
      selector: { matchLabels: { 'k8s-app': 'kube-proxy' } },
      template: {
        metadata: { labels: { 'k8s-app': 'kube-proxy' } },
        spec: {
          hostNetwork: true,
          volumes: [{ name: 'kube-proxy', configMap: { name: 'kube-proxy' } }],
          containers: [{ name: 'kube-proxy', image: `registry.k8s.io/kube-proxy:${version}` }],
        },
      },
    },
  };
}

interface DaemonSet extends KubeObject {
  spec: { template: { spec: { affinity?: unknown; containers: { image: string }[] } } };
}

beforeAll(async () => {
  server = await startSimApiServer();
  client = new KubeClient({ server: server.url, caPem: server.caPem, token: server.adminToken, contextName: 'sim' });
  server.setObject({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'kube-proxy', namespace: 'kube-system' },
    data: {
      'config.conf': 'mode: iptables',
      'kubeconfig.conf': 'clusters:\n- cluster:\n    server: https://10.0.0.10:6443\n',
    },
  });
});
afterAll(async () => {
  client?.close();
  await server?.stop();
});

describe('kube-proxy for edge nodes across an upgrade', () => {
  it("keeps kubeadm's kube-proxy off edge nodes again and moves their copy to the new version", async () => {
    const lines: string[] = [];
    server.setObject(kubeadmKubeProxy('v1.33.2'));
    expect(await routeEdgeKubeProxy(client, (line) => lines.push(line))).toBe('changed');
    // The upgrade: kubeadm writes its DaemonSet again, at the new version and without the exclusion.
    server.setObject(kubeadmKubeProxy('v1.34.4'));
    const rewritten = await client.get<DaemonSet>('/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy');
    expect(rewritten?.spec.template.spec.affinity).toBeUndefined();

    expect(await routeEdgeKubeProxy(client, (line) => lines.push(line))).toBe('changed');
    const kubeadms = await client.get<DaemonSet>('/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy');
    expect(JSON.stringify(kubeadms?.spec.template.spec.affinity)).toContain('"operator":"DoesNotExist"');
    const edge = await client.get<DaemonSet>(`/apis/apps/v1/namespaces/kube-system/daemonsets/${EDGE_KUBE_PROXY_NAME}`);
    expect(edge?.spec.template.spec.containers[0]?.image).toBe('registry.k8s.io/kube-proxy:v1.34.4');
  });
});
