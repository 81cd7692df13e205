/**
 * The human output of `hub rollout …` (`--json` prints the views as they
 * are): the status as a header line, a wave table with counts per state,
 * the declared summaries and, with `--clusters`, one row per cluster; the
 * list; what an apply did, and a dry run's waves and rendered copies.
 * Pure: strings in, strings out.
 */
import { dump } from 'js-yaml';
import type {
  ApplyResult,
  PhaseCounts,
  QuarantinedRollout,
  RolloutListItem,
  RolloutStatusView,
} from '../rollout/api.js';
import type { ClusterPhase } from '../rollout/progress.js';
import { ageOf } from './age.js';
import { columns } from './columns.js';

/** The states in the order a column reads them: from not yet started to done. */
const PHASES: readonly ClusterPhase[] = [
  'waiting',
  'held',
  'offline-pending',
  'applying',
  'progressing',
  'ready',
  'failed',
];

function countCells(counts: PhaseCounts): string[] {
  return PHASES.map((phase) => String(counts[phase] ?? 0));
}

function total(counts: PhaseCounts): number {
  return PHASES.reduce((sum, phase) => sum + (counts[phase] ?? 0), 0);
}

/** `web  revision 3  progressing  wave 2/3  ready 5/12` */
export function renderRolloutLine(view: RolloutStatusView): string {
  const waves = view.waves.length === 0 ? '' : `  wave ${view.currentWave + 1}/${view.waves.length}`;
  const halt = view.haltReason === undefined ? '' : `: ${view.haltReason}`;
  return `${view.name}  revision ${view.revision}  ${view.state}${halt}${waves}  ready ${view.counts.ready ?? 0}/${total(view.counts)}`;
}

/**
 * The whole status: header, waves, summaries, and the per-cluster rows when
 * the view has them (LAST SEEN: how long ago a cluster not connected now was
 * last seen, measured from `now`).
 */
export function renderRolloutStatus(view: RolloutStatusView, now: number): string {
  const lines = [
    `Rollout ${view.name}: revision ${view.revision}, ${view.state}${view.haltReason === undefined ? '' : ` (${view.haltReason})`}`,
    `Owner ${view.owner}, updated ${view.updatedAt}`,
    ...(view.rollbackOf === undefined
      ? []
      : [`Rolled back: revision ${view.rollbackOf.revision} halted (${view.rollbackOf.reason})`]),
    '',
    columns([
      ['WAVE', 'CLUSTERS', 'STATE', ...PHASES.map((phase) => phase.toUpperCase())],
      ...view.waves.map((wave) => [
        String(wave.index + 1),
        String(wave.clusters),
        wave.state,
        ...countCells(wave.counts),
      ]),
      ['all', String(total(view.counts)), view.state, ...countCells(view.counts)],
    ]),
  ];
  if (view.summaries.length > 0) {
    lines.push(
      '',
      columns([
        ['SUMMARY', 'VALUE', 'REPORTING'],
        ...view.summaries.map((summary) => [
          summary.name,
          summary.value === undefined ? '-' : String(summary.value),
          String(summary.reporting),
        ]),
      ]),
    );
  }
  if (view.clusters !== undefined) {
    lines.push(
      '',
      columns([
        ['CLUSTER', 'WAVE', 'PHASE', 'COPY REVISION', 'LAST SEEN', 'MESSAGE'],
        ...view.clusters.map((row) => [
          row.cluster,
          String(row.wave + 1),
          row.phase,
          row.targetRevision ?? '-',
          row.lastSeen === undefined ? '-' : ageOf(row.lastSeen, now),
          row.message ?? '',
        ]),
      ]),
    );
  }
  return lines.join('\n');
}

/** `hub rollout list`. */
/** The rollouts the hub quarantined at its start, one line each with the reason. */
export function renderQuarantined(items: readonly QuarantinedRollout[]): string {
  return [
    `Quarantined (the hub could not load them at its start; delete them and apply a fixed document):`,
    ...items.map((item) => `  ${item.name}  revision ${item.revision}  owner ${item.owner}: ${item.reason}`),
  ].join('\n');
}

export function renderRolloutList(items: readonly RolloutListItem[]): string {
  if (items.length === 0) return 'No rollouts.';
  return columns([
    ['NAME', 'REVISION', 'STATE', 'OWNER', 'CLUSTERS', 'READY', 'FAILED', 'UPDATED'],
    ...items.map((item) => [
      item.name,
      String(item.revision),
      item.state,
      item.owner,
      String(item.clusters),
      String(item.counts.ready ?? 0),
      String(item.counts.failed ?? 0),
      item.updatedAt,
    ]),
  ]);
}

/** What `apply` did; with a dry run, the waves and each cluster's rendered objects as YAML. */
export function renderApplyResult(result: ApplyResult): string {
  if (result.dryRun === undefined) {
    if (result.isUnchanged) return `rollout ${result.name} unchanged: revision ${result.revision}`;
    return `rollout ${result.name} ${result.isCreated ? 'created' : 'updated'}: revision ${result.revision}`;
  }
  const plan = result.dryRun;
  const lines = [
    `Dry run: rollout ${result.name} would be ${result.isUnchanged ? 'unchanged at' : result.isCreated ? 'created as' : 'updated to'} revision ${result.revision}; nothing was changed.`,
    '',
    ...plan.waves.map((clusters, index) => `Wave ${index + 1} (${clusters.length}): ${clusters.join(', ') || '-'}`),
  ];
  const failures = plan.copies.filter((copy) => copy.error !== undefined);
  if (failures.length > 0) {
    lines.push('', `Clusters whose copy cannot be rendered (${failures.length}):`);
    for (const copy of failures) lines.push(`  ${copy.cluster}: ${copy.error ?? ''}`);
  }
  for (const copy of plan.copies) {
    if (copy.error !== undefined) continue;
    if (copy.objects === undefined) {
      // The hub bounds the rendered objects in one answer; the rest are named without their objects.
      lines.push(
        '',
        `# cluster ${copy.cluster}, copy revision ${copy.revision ?? '-'}: objects not shown (answer size bound)`,
      );
      continue;
    }
    lines.push('', `# cluster ${copy.cluster}, copy revision ${copy.revision ?? '-'}`);
    for (const object of copy.objects) lines.push('---', dump(object, { lineWidth: -1 }).trimEnd());
  }
  return lines.join('\n');
}
