/**
 * The human table of `hub clusters list` and `get`.
 */
import type { ClusterView } from '../hub/contract/views.js';
import { columns } from './columns.js';

/** Renders clusters as aligned columns: name, state, version, nodes, last seen, labels. */
export function renderClusterTable(clusters: readonly ClusterView[]): string {
  const rows = [
    ['NAME', 'STATE', 'VERSION', 'NODES', 'LAST SEEN', 'LABELS'],
    ...clusters.map((c) => [
      c.name,
      c.state,
      c.kubernetesVersion ?? '-',
      c.nodeCount === undefined ? '-' : String(c.nodeCount),
      c.lastSeen ?? '-',
      Object.entries(c.labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(',') || '-',
    ]),
  ];
  return columns(rows);
}
