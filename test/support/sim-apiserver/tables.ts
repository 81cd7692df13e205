/**
 * Server-side printing: the `meta.k8s.io/v1` Table form that kubectl asks
 * for (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`) so that
 * `kubectl get` shows the usual columns. Each built-in type has a few
 * columns in the real server's spirit; any other type shows Name and Age.
 */
import type { ResourceDefinition } from './resources.js';
import type { KubeObject } from './store.js';

/** One column of a Table. */
export interface TableColumn {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

/** How much of each object a Table row carries (`includeObject`). */
export type IncludeObject = 'None' | 'Metadata' | 'Object';

type Cell = string | number;

interface ColumnSpec {
  column: TableColumn;
  cell: (object: KubeObject, now: number) => Cell;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const YEAR = 365 * DAY;

/** A short human age ("42s", "5m3s", "3h", "12d", "2y40d"), in the API server's style. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / SECOND);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(ms / MINUTE);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(ms / HOUR);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  const days = Math.floor(ms / DAY);
  if (hours < 8 * 24) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`;
  if (ms < 2 * YEAR) return `${days}d`;
  const years = Math.floor(ms / YEAR);
  if (ms < 8 * YEAR) return days % 365 === 0 ? `${years}y` : `${years}y${days % 365}d`;
  return `${years}y`;
}

function column(name: string, type: string, description: string, priority = 0, format = ''): TableColumn {
  return { name, type, format, description, priority };
}

function get(object: unknown, path: string): unknown {
  let current = object;
  for (const key of path.split('.')) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function text(value: unknown, fallback = '<none>'): string {
  if (value === undefined || value === null || value === '') return fallback;
  return typeof value === 'string' ? value : String(value);
}

function count(value: unknown): number {
  return value && typeof value === 'object' ? Object.keys(value).length : 0;
}

const NAME: ColumnSpec = {
  column: column('Name', 'string', 'Name must be unique within a namespace.', 0, 'name'),
  cell: (o) => o.metadata.name,
};

const AGE: ColumnSpec = {
  column: column(
    'Age',
    'string',
    'CreationTimestamp is a timestamp representing the server time when this object was created.',
  ),
  cell: (o, now) => {
    const created = Date.parse(o.metadata.creationTimestamp ?? '');
    return Number.isNaN(created) ? '<unknown>' : humanDuration(now - created);
  },
};

function podReady(o: KubeObject): string {
  const containers = get(o, 'spec.containers');
  const statuses = get(o, 'status.containerStatuses');
  const total = Array.isArray(containers) ? containers.length : 0;
  const ready = Array.isArray(statuses) ? statuses.filter((s) => get(s, 'ready') === true).length : 0;
  return `${ready}/${total}`;
}

function podRestarts(o: KubeObject): number {
  const statuses = get(o, 'status.containerStatuses');
  if (!Array.isArray(statuses)) return 0;
  return statuses.reduce((sum: number, s) => sum + (Number(get(s, 'restartCount')) || 0), 0);
}

function nodeStatus(o: KubeObject): string {
  const conditions = get(o, 'status.conditions');
  const ready = Array.isArray(conditions) ? conditions.find((c) => get(c, 'type') === 'Ready') : undefined;
  const state = get(ready, 'status') === 'True' ? 'Ready' : ready ? 'NotReady' : 'Unknown';
  return get(o, 'spec.unschedulable') === true ? `${state},SchedulingDisabled` : state;
}

function nodeRoles(o: KubeObject): string {
  const roles = Object.keys(o.metadata.labels ?? {})
    .filter((k) => k.startsWith('node-role.kubernetes.io/'))
    .map((k) => k.slice('node-role.kubernetes.io/'.length))
    .filter((r) => r.length > 0);
  return roles.length > 0 ? roles.sort().join(',') : '<none>';
}

function servicePorts(o: KubeObject): string {
  const ports = get(o, 'spec.ports');
  if (!Array.isArray(ports) || ports.length === 0) return '<none>';
  return ports
    .map((p) => {
      const nodePort = get(p, 'nodePort');
      return `${text(get(p, 'port'), '')}${nodePort ? `:${String(nodePort)}` : ''}/${text(get(p, 'protocol'), 'TCP')}`;
    })
    .join(',');
}

const COLUMNS: Record<string, ColumnSpec[]> = {
  '/namespaces': [
    NAME,
    {
      column: column('Status', 'string', 'The status of the namespace'),
      cell: (o) => text(get(o, 'status.phase'), 'Active'),
    },
    AGE,
  ],
  '/secrets': [
    NAME,
    { column: column('Type', 'string', 'The type of the secret'), cell: (o) => text(o['type'], 'Opaque') },
    { column: column('Data', 'string', 'The number of entries in the data map'), cell: (o) => count(o['data']) },
    AGE,
  ],
  '/configmaps': [
    NAME,
    {
      column: column('Data', 'string', 'The number of entries in the data and binaryData maps'),
      cell: (o) => count(o['data']) + count(o['binaryData']),
    },
    AGE,
  ],
  '/pods': [
    NAME,
    {
      column: column('Ready', 'string', 'The aggregate readiness state of this pod for accepting traffic.'),
      cell: podReady,
    },
    {
      column: column('Status', 'string', 'The aggregate status of the containers in this pod.'),
      cell: (o) => text(get(o, 'status.phase'), 'Pending'),
    },
    {
      column: column('Restarts', 'string', 'The number of times the containers in this pod have been restarted.'),
      cell: podRestarts,
    },
    AGE,
    {
      column: column('IP', 'string', 'The IP address assigned to the pod', 1),
      cell: (o) => text(get(o, 'status.podIP')),
    },
    {
      column: column('Node', 'string', 'The node the pod is scheduled to', 1),
      cell: (o) => text(get(o, 'spec.nodeName')),
    },
  ],
  '/nodes': [
    NAME,
    { column: column('Status', 'string', 'The status of the node'), cell: nodeStatus },
    { column: column('Roles', 'string', 'The roles of the node'), cell: nodeRoles },
    AGE,
    {
      column: column('Version', 'string', 'Kubelet Version reported by the node.'),
      cell: (o) => text(get(o, 'status.nodeInfo.kubeletVersion'), ''),
    },
  ],
  '/services': [
    NAME,
    {
      column: column('Type', 'string', 'The type of the service'),
      cell: (o) => text(get(o, 'spec.type'), 'ClusterIP'),
    },
    {
      column: column('Cluster-IP', 'string', 'The cluster IP of the service'),
      cell: (o) => text(get(o, 'spec.clusterIP')),
    },
    {
      column: column('External-IP', 'string', 'External IPs of the service'),
      cell: (o) => text((get(o, 'spec.externalIPs') as string[] | undefined)?.join(',')),
    },
    { column: column('Port(s)', 'string', 'The ports of the service'), cell: servicePorts },
    AGE,
  ],
  'coordination.k8s.io/leases': [
    NAME,
    {
      column: column('Holder', 'string', 'The holder of the lease'),
      cell: (o) => text(get(o, 'spec.holderIdentity'), ''),
    },
    AGE,
  ],
  'rbac.authorization.k8s.io/rolebindings': [
    NAME,
    {
      column: column('Role', 'string', 'The role the binding grants'),
      cell: (o) => `${text(get(o, 'roleRef.kind'), '')}/${text(get(o, 'roleRef.name'), '')}`,
    },
    AGE,
  ],
  'rbac.authorization.k8s.io/clusterrolebindings': [
    NAME,
    {
      column: column('Role', 'string', 'The role the binding grants'),
      cell: (o) => `${text(get(o, 'roleRef.kind'), '')}/${text(get(o, 'roleRef.name'), '')}`,
    },
    AGE,
  ],
};

function specsFor(definition: ResourceDefinition): ColumnSpec[] {
  return COLUMNS[`${definition.group}/${definition.resource}`] ?? [NAME, AGE];
}

function rowObject(object: KubeObject, include: IncludeObject): Record<string, unknown> | undefined {
  if (include === 'None') return undefined;
  if (include === 'Object') return object;
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: object.metadata };
}

/** Renders objects as a `meta.k8s.io/v1` Table. */
export function toTable(
  definition: ResourceDefinition,
  objects: KubeObject[],
  options: { resourceVersion: string; includeObject: IncludeObject; now?: number },
): Record<string, unknown> {
  const specs = specsFor(definition);
  const now = options.now ?? Date.now();
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: options.resourceVersion },
    columnDefinitions: specs.map((s) => s.column),
    rows: objects.map((object) => {
      const row: Record<string, unknown> = { cells: specs.map((s) => s.cell(object, now)) };
      const included = rowObject(object, options.includeObject);
      if (included) row['object'] = included;
      return row;
    }),
  };
}

/** Whether an Accept header asks for the Table form. */
export function wantsTable(accept: string | undefined): boolean {
  if (!accept) return false;
  const first = accept.split(',')[0] ?? '';
  return /;\s*as=Table/.test(first) && /;\s*g=meta\.k8s\.io/.test(first);
}

/** The Table content type to answer with. */
export const TABLE_CONTENT_TYPE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
