/**
 * The human table of `hub clusters list` and `get`.
 */
import type { ClusterView } from '../hub/contract/views.js';

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
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
