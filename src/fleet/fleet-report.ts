/**
 * The final report of a fleet run as a human table: host, (with `showRole`)
 * its role, result, duration, the failing phase and the error (or failing
 * checks), then the counts.
 */
import type { HostStatus } from './run-state.js';

/** A row of the report. */
export interface FleetReportRow {
  host: string;
  /** Shown with `showRole` (`fleet up`: `control-plane (init)`, `control-plane`, `worker`). */
  role?: string;
  status: HostStatus;
  durationMs?: number;
  phase?: string;
  error?: { code: string; message: string };
  failingChecks?: string[];
}

/** Widest error text in the table; the full text is in the host's log and in `--json`. */
export const MAX_ERROR_WIDTH = 120;

const RESULT: Record<HostStatus, string> = {
  done: 'ok',
  failed: 'FAILED',
  skipped: 'skipped',
  pending: 'pending',
  running: 'running',
};

/** Renders the table (no colour; the caller styles it if it wants). */
export function renderFleetReport(rows: FleetReportRow[], options: { showRole?: boolean } = {}): string[] {
  const cells = rows.map((row) => {
    const failedPhase = row.status === 'failed' ? (row.phase ?? '') : '';
    const reason = row.failingChecks?.length
      ? `failing checks: ${row.failingChecks.join(', ')}`
      : row.error
        ? `${row.error.code}: ${row.error.message}`
        : '';
    return [
      row.host,
      ...(options.showRole ? [row.role ?? '-'] : []),
      RESULT[row.status],
      row.durationMs === undefined ? '-' : `${(row.durationMs / 1000).toFixed(1)}s`,
      failedPhase || '-',
      reason.length > MAX_ERROR_WIDTH ? `${reason.slice(0, MAX_ERROR_WIDTH - 1)}…` : reason || '-',
    ];
  });
  const header = ['HOST', ...(options.showRole ? ['ROLE'] : []), 'RESULT', 'DURATION', 'PHASE', 'ERROR'];
  const widths = header.map((title, column) => Math.max(title.length, ...cells.map((cell) => cell[column]!.length)));
  const line = (cell: string[]): string =>
    cell
      .map((text, column) => (column === cell.length - 1 ? text : text.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd();
  const counts: Partial<Record<HostStatus, number>> = {};
  for (const row of rows) counts[row.status] = (counts[row.status] ?? 0) + 1;
  const summary = (['done', 'failed', 'skipped', 'pending'] as const)
    .filter((status) => counts[status])
    .map((status) => `${counts[status]} ${status === 'done' ? 'ok' : status}`)
    .join(', ');
  return [line(header), ...cells.map(line), '', `${rows.length} ${rows.length === 1 ? 'host' : 'hosts'}: ${summary}`];
}
