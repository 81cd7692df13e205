/**
 * The human table of `hub replicas list`.
 */
import type { ReplicaView } from '../hub/contract/views.js';
import { columns } from './columns.js';

/** Renders replicas as aligned columns: id, address, tunnels, leader. */
export function renderReplicaTable(replicas: readonly ReplicaView[]): string {
  const rows = [
    ['REPLICA', 'ADDRESS', 'TUNNELS', 'LEADER', 'STARTED'],
    ...replicas.map((r) => [
      r.isSelf ? `${r.id} (answered)` : r.id,
      r.advertiseUrl,
      String(r.tunnels),
      r.isLeader === undefined ? 'unknown' : r.isLeader ? 'yes' : 'no',
      r.startedAt,
    ]),
  ];
  return columns(rows);
}
