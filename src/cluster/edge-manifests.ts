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

/** manifests/site-grid-crd.yaml */
export const SITE_GRID_CRD_MANIFEST = `# The SiteGrid resource: one workload and Service, one copy per site (nodes
# labelled edgeadm.io/site=NAME), with per-site overrides. The edgeadm site
# grid controller keeps the copies; see docs/guides/site-grids.md.
# Applied by "edgeadm init --enable-edge" (phase edge-addons).
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sitegrids.edgeadm.io
  labels:
    app.kubernetes.io/managed-by: edgeadm
    app.kubernetes.io/component: site-grids
spec:
  group: edgeadm.io
  scope: Namespaced
  names:
    kind: SiteGrid
    listKind: SiteGridList
    plural: sitegrids
    singular: sitegrid
    shortNames: [sg]
  versions:
    - name: v1alpha1
      served: true
      storage: true
      subresources:
        status: {}
      additionalPrinterColumns:
        - { name: Kind, type: string, jsonPath: .spec.workload.kind }
        - { name: Age, type: date, jsonPath: .metadata.creationTimestamp }
      schema:
        openAPIV3Schema:
          type: object
          required: [spec]
          properties:
            spec:
              type: object
              required: [workload]
              properties:
                sites:
                  description: Which sites get a copy, by name and/or by the labels all their nodes share; every site when both are absent.
                  type: object
                  properties:
                    names:
                      type: array
                      maxItems: 1000
                      items: { type: string, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' }
                    selector: &selector
                      type: object
                      properties:
                        matchLabels:
                          type: object
                          additionalProperties: { type: string, maxLength: 63 }
                        matchExpressions:
                          type: array
                          maxItems: 20
                          items:
                            type: object
                            required: [key, operator]
                            properties:
                              key: { type: string, maxLength: 317 }
                              operator: { type: string, enum: [In, NotIn, Exists, DoesNotExist] }
                              values: { type: array, maxItems: 100, items: { type: string, maxLength: 63 } }
                workload:
                  type: object
                  required: [kind, template]
                  properties:
                    kind: { type: string, enum: [Deployment, StatefulSet] }
                    replicas: { type: integer, minimum: 0, maximum: 1000 }
                    template:
                      description: A pod template (PodTemplateSpec); the controller adds the site's labels, node selector and the edge taint's toleration.
                      type: object
                      required: [spec]
                      x-kubernetes-preserve-unknown-fields: true
                      properties:
                        metadata:
                          type: object
                          x-kubernetes-preserve-unknown-fields: true
                        spec:
                          type: object
                          required: [containers]
                          x-kubernetes-preserve-unknown-fields: true
                          properties:
                            containers:
                              type: array
                              minItems: 1
                              items:
                                type: object
                                required: [name]
                                x-kubernetes-preserve-unknown-fields: true
                                properties:
                                  name: { type: string, maxLength: 63 }
                service:
                  description: The Service of every copy (its ports and type); the grid's own Service keeps each site's clients in their site.
                  type: object
                  required: [ports]
                  properties:
                    type: { type: string, enum: [ClusterIP, NodePort] }
                    ports:
                      type: array
                      minItems: 1
                      maxItems: 100
                      items:
                        type: object
                        required: [port]
                        x-kubernetes-preserve-unknown-fields: true
                        properties:
                          port: { type: integer, minimum: 1, maximum: 65535 }
                overrides:
                  description: Per-site changes, in order (a later one wins), for sites by name or by label.
                  type: array
                  maxItems: 1000
                  items:
                    type: object
                    x-kubernetes-validations:
                      - rule: has(self.sites) || has(self.siteSelector)
                        message: an override names its sites or selects them by label
                    properties:
                      sites:
                        type: array
                        maxItems: 1000
                        items: { type: string, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' }
                      siteSelector: *selector
                      replicas: { type: integer, minimum: 0, maximum: 1000 }
                      container: { type: string, maxLength: 63 }
                      image: { type: string, minLength: 1, maxLength: 1024 }
                      env:
                        type: array
                        maxItems: 200
                        items:
                          type: object
                          required: [name]
                          x-kubernetes-preserve-unknown-fields: true
                          properties:
                            name: { type: string, minLength: 1, maxLength: 253 }
                            value: { type: string }
                      resources:
                        type: object
                        x-kubernetes-preserve-unknown-fields: true
            status:
              type: object
              properties:
                observedGeneration: { type: integer }
                sites:
                  type: array
                  items:
                    type: object
                    required: [site, state]
                    properties:
                      site: { type: string }
                      state: { type: string, enum: [Ready, Progressing, Offline, Invalid] }
                      nodes: { type: integer }
                      readyNodes: { type: integer }
                      replicas: { type: integer }
                      readyReplicas: { type: integer }
                      observedGeneration: { type: integer }
                      message: { type: string }
`;

/** manifests/site-grid-controller.yaml */
export const SITE_GRID_CONTROLLER_MANIFEST = `# The site grid controller's identity and rights: it runs as this service
# account (edgeadm agent site-grid-controller, a service on the control
# plane), with only what keeping the copies needs. It reads Nodes (to see
# sites), reads SiteGrids and writes their status, and manages Deployments,
# StatefulSets and Services; it deletes only those a grid owns (owner
# reference), a rule of its code that RBAC cannot state. See SECURITY.md.
#
# Template values: {{SITE_GRID_CONTROLLER}}.
apiVersion: v1
kind: ServiceAccount
metadata:
  name: '{{SITE_GRID_CONTROLLER}}'
  namespace: kube-system
  labels:
    app.kubernetes.io/managed-by: edgeadm
    app.kubernetes.io/component: site-grids
---
# A long-lived token for the service on the control plane (it has no pod to
# get a projected one); kept in kube-system, readable by cluster admins only.
apiVersion: v1
kind: Secret
type: kubernetes.io/service-account-token
metadata:
  name: '{{SITE_GRID_CONTROLLER}}-token'
  namespace: kube-system
  labels:
    app.kubernetes.io/managed-by: edgeadm
    app.kubernetes.io/component: site-grids
  annotations:
    kubernetes.io/service-account.name: '{{SITE_GRID_CONTROLLER}}'
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: 'edgeadm:site-grid-controller'
  labels:
    app.kubernetes.io/managed-by: edgeadm
    app.kubernetes.io/component: site-grids
rules:
  - apiGroups: ['']
    resources: ['nodes']
    verbs: ['get', 'list', 'watch']
  - apiGroups: ['edgeadm.io']
    resources: ['sitegrids']
    verbs: ['get', 'list', 'watch']
  - apiGroups: ['edgeadm.io']
    resources: ['sitegrids/status']
    verbs: ['get', 'patch', 'update']
  - apiGroups: ['apps']
    resources: ['deployments', 'statefulsets']
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete']
  - apiGroups: ['']
    resources: ['services']
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete']
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: 'edgeadm:site-grid-controller'
  labels:
    app.kubernetes.io/managed-by: edgeadm
    app.kubernetes.io/component: site-grids
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: 'edgeadm:site-grid-controller'
subjects:
  - kind: ServiceAccount
    name: '{{SITE_GRID_CONTROLLER}}'
    namespace: kube-system
`;

/** The edge addon templates in the order init applies them, by file name. */
export const EDGE_ADDON_MANIFESTS: ReadonlyArray<{ file: string; template: string }> = [
  { file: 'edge-node-config.yaml', template: EDGE_NODE_CONFIG_MANIFEST },
  { file: 'edge-join-rbac.yaml', template: EDGE_JOIN_RBAC_MANIFEST },
  { file: 'site-grid-crd.yaml', template: SITE_GRID_CRD_MANIFEST },
  { file: 'site-grid-controller.yaml', template: SITE_GRID_CONTROLLER_MANIFEST },
];
