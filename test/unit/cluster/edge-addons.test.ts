import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  EDGE_JOIN_RBAC_MANIFEST,
  EDGE_NODE_CONFIG_MANIFEST,
  SITE_GRID_CONTROLLER_MANIFEST,
  SITE_GRID_CRD_MANIFEST,
} from '../../../src/cluster/edge-manifests.js';
import { defaultEdgeSettings, edgeAddonObjects, parseEdgeSettings } from '../../../src/cluster/edge-settings.js';
import { objectPath, renderManifest } from '../../../src/cluster/manifests.js';

const manifest = (file: string): string => readFileSync(new URL(`../../../manifests/${file}`, import.meta.url), 'utf8');

describe('edge addon manifests', () => {
  it('are embedded byte for byte as in manifests/', () => {
    expect(EDGE_NODE_CONFIG_MANIFEST).toBe(manifest('edge-node-config.yaml'));
    expect(EDGE_JOIN_RBAC_MANIFEST).toBe(manifest('edge-join-rbac.yaml'));
    expect(SITE_GRID_CRD_MANIFEST).toBe(manifest('site-grid-crd.yaml'));
    expect(SITE_GRID_CONTROLLER_MANIFEST).toBe(manifest('site-grid-controller.yaml'));
  });

  it('render into the settings ConfigMap and the RBAC that lets joining nodes read only it', () => {
    const objects = edgeAddonObjects(defaultEdgeSettings());
    expect(objects.map((o) => `${o.kind} ${o.metadata?.namespace}/${o.metadata?.name}`)).toEqual([
      'ConfigMap kube-system/edgeadm-edge',
      'Role kube-system/edgeadm:edge-join',
      'RoleBinding kube-system/edgeadm:edge-join',
      'CustomResourceDefinition undefined/sitegrids.edgeadm.io',
      'ServiceAccount kube-system/edgeadm-site-grid-controller',
      'Secret kube-system/edgeadm-site-grid-controller-token',
      'ClusterRole undefined/edgeadm:site-grid-controller',
      'ClusterRoleBinding undefined/edgeadm:site-grid-controller',
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
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/sitegrids.edgeadm.io',
      '/api/v1/namespaces/kube-system/serviceaccounts/edgeadm-site-grid-controller',
      '/api/v1/namespaces/kube-system/secrets/edgeadm-site-grid-controller-token',
      '/apis/rbac.authorization.k8s.io/v1/clusterroles/edgeadm:site-grid-controller',
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/edgeadm:site-grid-controller',
    ]);
  });

  it("give the site grid controller no secrets, no pods and no deletions beyond the grids' kinds", () => {
    const role = edgeAddonObjects(defaultEdgeSettings()).find((o) => o.kind === 'ClusterRole')!;
    const rules = role.rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
    const granted = rules.flatMap((rule) =>
      rule.resources.flatMap((resource) => rule.verbs.map((verb) => `${verb} ${resource}`)),
    );
    expect(granted.filter((g) => g.startsWith('delete ')).sort()).toEqual([
      'delete deployments',
      'delete services',
      'delete statefulsets',
    ]);
    expect(granted.some((g) => /secrets|pods|\*/.test(g))).toBe(false);
    expect(granted.filter((g) => g.endsWith(' nodes')).sort()).toEqual(['get nodes', 'list nodes', 'watch nodes']);
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
