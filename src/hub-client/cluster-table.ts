/**
 * The human table of `hub clusters list` and `get`. Pure: the time the
 * ages are measured from is passed in.
 */
import type { ClusterView } from '../hub/contract/views.js';
import { lastSeenCell } from './age.js';
import { columns } from './columns.js';

/** A cluster's labels as one cell: `k=v,k2=v2`, or `-`. */
export function labelsCell(cluster: ClusterView): string {
  return (
    Object.entries(cluster.labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(',') || '-'
  );
}

/** Renders clusters as aligned columns: name, state, version, nodes, last seen (an age), labels. */
export function renderClusterTable(clusters: readonly ClusterView[], now: number): string {
  const rows = [
    ['NAME', 'STATE', 'VERSION', 'NODES', 'LAST SEEN', 'LABELS'],
    ...clusters.map((c) => [
      c.name,
      c.state,
      c.kubernetesVersion ?? '-',
      c.nodeCount === undefined ? '-' : String(c.nodeCount),
      lastSeenCell(c, now),
      labelsCell(c),
    ]),
  ];
  return columns(rows);
}
