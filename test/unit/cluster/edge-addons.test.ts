import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EDGE_JOIN_RBAC_MANIFEST, EDGE_NODE_CONFIG_MANIFEST } from '../../../src/cluster/edge-manifests.js';
import { defaultEdgeSettings, edgeAddonObjects, parseEdgeSettings } from '../../../src/cluster/edge-settings.js';
import { objectPath, renderManifest } from '../../../src/cluster/manifests.js';

const manifest = (file: string): string => readFileSync(new URL(`../../../manifests/${file}`, import.meta.url), 'utf8');

describe('edge addon manifests', () => {
  it('are embedded byte for byte as in manifests/', () => {
    expect(EDGE_NODE_CONFIG_MANIFEST).toBe(manifest('edge-node-config.yaml'));
    expect(EDGE_JOIN_RBAC_MANIFEST).toBe(manifest('edge-join-rbac.yaml'));
  });

  it('render into the settings ConfigMap and the RBAC that lets joining nodes read only it', () => {
    const objects = edgeAddonObjects(defaultEdgeSettings());
    expect(objects.map((o) => `${o.kind} ${o.metadata?.namespace}/${o.metadata?.name}`)).toEqual([
      'ConfigMap kube-system/edgeadm-edge',
      'Role kube-system/edgeadm:edge-join',
      'RoleBinding kube-system/edgeadm:edge-join',
    ]);
    expect(objects[0]!.data).toEqual({
      autonomyDuration: '24h0m0s',
      nodeLabels: 'edgeadm.io/edge=true',
      nodeTaints: 'edgeadm.io/edge=true:NoSchedule',
      proxyCacheMaxBytes: '256Mi',
      proxyCacheMaxEntries: '10000',
    });
    expect(objects[1]!.rules).toEqual([
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['edgeadm-edge'], verbs: ['get'] },
    ]);
    expect(objects.map(objectPath)).toEqual([
      '/api/v1/namespaces/kube-system/configmaps/edgeadm-edge',
      '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles/edgeadm:edge-join',
      '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/edgeadm:edge-join',
    ]);
  });

  it('refuse a missing value and a value that would break out of its YAML string', () => {
    expect(() => renderManifest(EDGE_NODE_CONFIG_MANIFEST, {}, 'x')).toThrow(/no value for \{\{EDGE_CONFIG_NAME\}\}/);
    const values = { EDGE_CONFIG_NAME: "a'\nkind: Secret" };
    expect(() => renderManifest(EDGE_JOIN_RBAC_MANIFEST, values, 'x')).toThrow(/cannot hold/);
  });

  it('the settings read back are those written, and bad ones are refused', () => {
    const data = edgeAddonObjects(defaultEdgeSettings())[0]!.data as Record<string, string>;
    expect(parseEdgeSettings(data)).toEqual(defaultEdgeSettings());
    expect(() => parseEdgeSettings({ ...data, nodeTaints: 'edgeadm.io/edge=true' })).toThrow(/key=value:Effect/);
    expect(() => parseEdgeSettings({ ...data, proxyCacheMaxEntries: '0' })).toThrow(/positive integer/);
    expect(() => parseEdgeSettings({ ...data, proxyCacheMaxBytes: 'lots' })).toThrow(/size/);
  });
});
