/**
 * The edge addon manifests (manifests/ at the top of the repository),
 * embedded so that the single binary, which has no files beside it, can
 * apply them. A unit test keeps this text identical to the files.
 */

/** manifests/edge-node-config.yaml */
export const EDGE_NODE_CONFIG_MANIFEST = `# The settings edge nodes read when they join with --enable-edge: the label
# and taint they register with, the bounds of their edge-proxy's cache, and
# how long their pods tolerate being cut off from the control plane
# (autonomyDuration, a Go duration, 0 = never evict; "join
# --autonomy-duration" overrides it for one node).
# Applied by "edgeadm init --enable-edge" (phase edge-addons) with
# server-side apply; edit it with kubectl before joining nodes to change
# what new edge nodes get (a re-run of init puts edgeadm's values back).
#
# Template values: {{EDGE_CONFIG_NAME}}, {{EDGE_NODE_LABELS}},
# {{EDGE_NODE_TAINTS}}, {{PROXY_CACHE_MAX_BYTES}}, {{PROXY_CACHE_MAX_ENTRIES}},
# {{AUTONOMY_DURATION}}.
apiVersion: v1
kind: ConfigMap
metadata:
  name: '{{EDGE_CONFIG_NAME}}'
  namespace: kube-system
  labels:
    app.kubernetes.io/managed-by: edgeadm
    app.kubernetes.io/component: edge
data:
  nodeLabels: '{{EDGE_NODE_LABELS}}'
  nodeTaints: '{{EDGE_NODE_TAINTS}}'
  proxyCacheMaxBytes: '{{PROXY_CACHE_MAX_BYTES}}'
  proxyCacheMaxEntries: '{{PROXY_CACHE_MAX_ENTRIES}}'
  autonomyDuration: '{{AUTONOMY_DURATION}}'
`;

/** manifests/edge-join-rbac.yaml */
export const EDGE_JOIN_RBAC_MANIFEST = `# Lets a joining edge node read the edge settings: "edgeadm join
# --enable-edge" reads them with the bootstrap token (group
# system:bootstrappers) before the node has credentials of its own, and
# nodes (group system:nodes) may read them again later. Nothing else in
# kube-system becomes readable.
#
# Template values: {{EDGE_CONFIG_NAME}}.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: 'edgeadm:edge-join'
  namespace: kube-system
  labels:
    app.kubernetes.io/managed-by: edgeadm
    app.kubernetes.io/component: edge
rules:
  - apiGroups: ['']
    resources: ['configmaps']
    resourceNames: ['{{EDGE_CONFIG_NAME}}']
    verbs: ['get']
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: 'edgeadm:edge-join'
  namespace: kube-system
  labels:
    app.kubernetes.io/managed-by: edgeadm
    app.kubernetes.io/component: edge
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: 'edgeadm:edge-join'
subjects:
  - apiGroup: rbac.authorization.k8s.io
    kind: Group
    name: 'system:bootstrappers'
  - apiGroup: rbac.authorization.k8s.io
    kind: Group
    name: 'system:nodes'
`;

/** The edge addon templates in the order init applies them, by file name. */
export const EDGE_ADDON_MANIFESTS: ReadonlyArray<{ file: string; template: string }> = [
  { file: 'edge-node-config.yaml', template: EDGE_NODE_CONFIG_MANIFEST },
  { file: 'edge-join-rbac.yaml', template: EDGE_JOIN_RBAC_MANIFEST },
];
