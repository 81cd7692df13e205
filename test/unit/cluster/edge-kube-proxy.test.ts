import { describe, expect, it } from 'vitest';
import { edgeKubeProxyKubeconfig, edgeKubeProxyObjects } from '../../../src/cluster/edge-kube-proxy.js';

/** kube-proxy's ConfigMap and DaemonSet as kubeadm v1.34 writes them (the fields read here). */
const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    server: https://10.0.0.10:6443
  name: default
users:
- name: default
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
`;
const configMap = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'kube-proxy', namespace: 'kube-system' },
  data: { 'config.conf': 'mode: iptables', 'kubeconfig.conf': KUBECONFIG },
};
const daemonSet = {
  metadata: { name: 'kube-proxy', namespace: 'kube-system' },
  spec: {
    selector: { matchLabels: { 'k8s-app': 'kube-proxy' } },
    template: {
      metadata: { labels: { 'k8s-app': 'kube-proxy' } },
      spec: {
        nodeSelector: { 'kubernetes.io/os': 'linux' },
        hostNetwork: true,
        volumes: [{ name: 'kube-proxy', configMap: { name: 'kube-proxy' } }],
        containers: [
          {
            name: 'kube-proxy',
            image: 'registry.k8s.io/kube-proxy:v1.34.4',
            volumeMounts: [{ name: 'kube-proxy', mountPath: '/var/lib/kube-proxy' }],
          },
        ],
      },
    },
  },
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON read back for assertions
type Json = Record<string, any>;

describe('kube-proxy on edge nodes through the edge-proxy', () => {
  it("names the node's edge-proxy and its CA, keeping the service account token", () => {
    const text = edgeKubeProxyKubeconfig(KUBECONFIG);
    expect(text).toContain('server: https://127.0.0.1:10261');
    expect(text).toContain('certificate-authority: /var/lib/edgeadm/edge-proxy/pki/ca.crt');
    expect(text).toContain('tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token');
  });

  it("runs a copy on edge nodes only, with its own selector and the proxy's CA, and keeps kubeadm's off them", () => {
    // The rendered objects' shape is the test's to check: read them as plain JSON.
    const [cm, edge, offEdge] = JSON.parse(JSON.stringify(edgeKubeProxyObjects(daemonSet, configMap))) as Array<
      Record<string, never>
    > as Json[];
    expect(cm!.metadata.name).toBe('kube-proxy-edge');
    expect(cm!.data['config.conf']).toBe('mode: iptables');
    const spec = edge!.spec.template.spec;
    expect(edge!.spec.selector.matchLabels).toEqual({ 'k8s-app': 'kube-proxy-edge' });
    expect(edge!.spec.template.metadata.labels['k8s-app']).toBe('kube-proxy-edge');
    expect(spec.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux', 'edgeadm.io/edge': 'true' });
    expect(spec.hostNetwork).toBe(true);
    expect(spec.volumes[0].configMap.name).toBe('kube-proxy-edge');
    expect(spec.containers[0].volumeMounts).toContainEqual({
      name: 'edgeadm-edge-proxy-ca',
      mountPath: '/var/lib/edgeadm/edge-proxy/pki/ca.crt',
      readOnly: true,
    });
    expect(offEdge!.metadata.name).toBe('kube-proxy');
    expect(offEdge!.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution).toEqual({
      nodeSelectorTerms: [{ matchExpressions: [{ key: 'edgeadm.io/edge', operator: 'DoesNotExist' }] }],
    });
  });
});
