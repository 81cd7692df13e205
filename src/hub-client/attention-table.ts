/**
 * The human output of `hub clusters list --attention`: one row per cluster
 * that needs attention with its reasons in words, the halted rollouts, and
 * what the hub could not tell. Ages are measured from the hub's own time
 * (the list's `now`), as its thresholds were. Pure: strings in, strings out.
 */
import type { AttentionReason } from '../hub/contract/attention.js';
import { ageOf, lastSeenCell, shortDuration, untilOf } from './age.js';
import { columns } from './columns.js';
import type { AttentionList } from './hub-client.js';

/** Most node names a reason spells out; the rest are counted. */
const MAX_NAMES_SHOWN = 3;

function names(items: readonly string[]): string {
  const shown = items.slice(0, MAX_NAMES_SHOWN).join(', ');
  return items.length > MAX_NAMES_SHOWN ? `${shown} +${items.length - MAX_NAMES_SHOWN}` : shown;
}

/** One reason in a few words: "offline 3h", "1/3 nodes not Ready: node-b", "held by alice: opening hours". */
export function describeReason(reason: AttentionReason, now: number): string {
  switch (reason.kind) {
    case 'offline':
      return reason.isNeverConnected ? 'never connected' : `offline ${shortDuration(now - Date.parse(reason.since))}`;
    case 'rollout-halted':
      return `rollout ${reason.rollouts.map((r) => `${r.rollout} halted (${r.phase} here)`).join(', ')}`;
    case 'nodes-not-ready': {
      const missing = reason.total - reason.ready;
      const named = reason.notReady.length > 0 ? `: ${names(reason.notReady)}` : '';
      return `${missing}/${reason.total} nodes not Ready${named}`;
    }
    case 'certificate-expiring': {
      const [first, ...rest] = reason.certificates;
      if (first === undefined) return 'certificate expiring';
      const at = Date.parse(first.notAfter);
      const when = at < now ? `expired ${untilOf(first.notAfter, now)}` : `expires ${untilOf(first.notAfter, now)}`;
      return `${first.kind} certificate ${when}${rest.length > 0 ? ` (+${rest.length} more)` : ''}`;
    }
    case 'held':
      return `held by ${reason.by}: ${reason.reason}`;
  }
}

/** The attention list as a table, then its halted rollouts and what it could not tell. */
export function renderAttentionList(list: AttentionList): string {
  const now = Date.parse(list.now);
  const lines: string[] = [];
  if (list.rows.length === 0) {
    lines.push('No cluster needs attention.');
  } else {
    lines.push(
      columns([
        ['NAME', 'STATE', 'LAST SEEN', 'SINCE', 'REASONS'],
        ...list.rows.map((row) => [
          row.cluster.name,
          row.cluster.state,
          lastSeenCell(row.cluster, now),
          row.since === undefined ? '-' : ageOf(row.since, now),
          row.reasons.map((reason) => describeReason(reason, now)).join('; '),
        ]),
      ]),
    );
  }
  if (list.haltedRollouts.length > 0) {
    lines.push('', 'Halted rollouts:');
    for (const rollout of list.haltedRollouts) {
      const why = rollout.haltReason === undefined ? '' : `: ${rollout.haltReason}`;
      lines.push(`  ${rollout.name} (${rollout.clusters} clusters), halted ${ageOf(rollout.since, now)}${why}`);
    }
  }
  if (!list.isRolloutStateKnown) {
    lines.push(
      '',
      'This hub replica does not run the rollout controller: halted rollouts are not shown. ' +
        'Ask the replica that leads ("edgeadm hub replicas list").',
    );
  }
  return lines.join('\n');
}
