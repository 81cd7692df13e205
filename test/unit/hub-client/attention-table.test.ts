/**
 * The CLI's tables as an operator reads them (src/hub-client/age.ts,
 * cluster-table.ts, attention-table.ts, rollout-table.ts): last seen as an
 * age or "connected", each attention reason in a few words, the halted
 * rollouts, and a word when the replica cannot tell about rollouts.
 */
import { describe, expect, it } from 'vitest';
import { ageOf, lastSeenCell, shortDuration, untilOf } from '../../../src/hub-client/age.js';
import { describeReason, renderAttentionList } from '../../../src/hub-client/attention-table.js';
import { renderClusterTable } from '../../../src/hub-client/cluster-table.js';
import type { AttentionList } from '../../../src/hub-client/hub-client.js';
import { renderRolloutStatus } from '../../../src/hub-client/rollout-table.js';
import type { ClusterView } from '../../../src/hub/contract/views.js';
import type { RolloutStatusView } from '../../../src/rollout/api.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const at = (offsetMs: number): string => new Date(NOW + offsetMs).toISOString();
const MIN = 60_000;
const DAY = 86_400_000;

function cluster(name: string, extra: Partial<ClusterView> = {}): ClusterView {
  return {
    name,
    labels: { env: 'prod' },
    state: 'Connected',
    lastSeen: at(0),
    registeredAt: at(-DAY),
    certNotAfter: at(20 * DAY),
    ...extra,
  };
}

describe('ages', () => {
  it('reads as the largest whole unit, never negative', () => {
    expect([0, 59_999, MIN, 59 * MIN, 60 * MIN, DAY - 1, DAY, 40 * DAY, -5_000].map(shortDuration)).toEqual([
      '0s',
      '59s',
      '1m',
      '59m',
      '1h',
      '23h',
      '1d',
      '40d',
      '0s',
    ]);
    expect(ageOf(at(-3 * MIN), NOW)).toBe('3m ago');
    expect(ageOf(undefined, NOW)).toBe('never');
    expect(untilOf(at(9 * DAY), NOW)).toBe('in 9d');
    expect(untilOf(at(-2 * DAY), NOW)).toBe('2d ago');
  });

  it('says "connected" for a connected cluster, whatever its last-seen time', () => {
    expect(lastSeenCell({ state: 'Connected', lastSeen: at(-DAY) }, NOW)).toBe('connected');
    expect(lastSeenCell({ state: 'Disconnected', lastSeen: at(-2 * 3_600_000) }, NOW)).toBe('2h ago');
    expect(lastSeenCell({ state: 'Disconnected' }, NOW)).toBe('never');
  });
});

describe('hub clusters list', () => {
  it('shows LAST SEEN as an age', () => {
    const table = renderClusterTable(
      [cluster('shop-1'), cluster('shop-2', { state: 'Disconnected', lastSeen: at(-3 * MIN) })],
      NOW,
    );
    expect(table.split('\n')).toEqual([
      'NAME    STATE         VERSION  NODES  LAST SEEN  LABELS',
      'shop-1  Connected     -        -      connected  env=prod',
      'shop-2  Disconnected  -        -      3m ago     env=prod',
    ]);
  });
});

describe('hub clusters list --attention', () => {
  it('says each reason in a few words', () => {
    const words = [
      describeReason({ kind: 'offline', since: at(-3 * 3_600_000), isNeverConnected: false }, NOW),
      describeReason({ kind: 'offline', since: at(-DAY), isNeverConnected: true }, NOW),
      describeReason({ kind: 'rollout-halted', since: at(0), rollouts: [{ rollout: 'web', phase: 'failed' }] }, NOW),
      describeReason(
        { kind: 'nodes-not-ready', ready: 1, total: 6, notReady: ['a', 'b', 'c', 'd', 'e'], reportedAt: at(0) },
        NOW,
      ),
      describeReason(
        {
          kind: 'certificate-expiring',
          certificates: [
            { kind: 'apiserver-serving', subject: 'CN=kube-apiserver', notAfter: at(-2 * DAY) },
            { kind: 'cluster-ca', subject: 'CN=ca', notAfter: at(9 * DAY) },
          ],
        },
        NOW,
      ),
      describeReason(
        { kind: 'certificate-expiring', certificates: [{ kind: 'cluster-ca', subject: 'x', notAfter: at(9 * DAY) }] },
        NOW,
      ),
      describeReason({ kind: 'held', since: at(0), by: 'alice', reason: 'opening hours' }, NOW),
    ];
    expect(words).toEqual([
      'offline 3h',
      'never connected',
      'rollout web halted (failed here)',
      '5/6 nodes not Ready: a, b, c +2',
      'apiserver-serving certificate expired 2d ago (+1 more)',
      'cluster-ca certificate expires in 9d',
      'held by alice: opening hours',
    ]);
  });

  it('lists the clusters with their reasons, then the halted rollouts, ages from the hub’s time', () => {
    const list: AttentionList = {
      total: 2,
      rows: [
        {
          cluster: cluster('shop-2', { state: 'Disconnected', lastSeen: at(-5 * MIN) }),
          reasons: [{ kind: 'offline', since: at(-5 * MIN), isNeverConnected: false }],
          since: at(-5 * MIN),
        },
        {
          cluster: cluster('shop-1', { hold: { reason: 'opening hours', by: 'alice', since: at(-DAY) } }),
          reasons: [
            { kind: 'rollout-halted', since: at(-2 * DAY), rollouts: [{ rollout: 'web', phase: 'waiting' }] },
            { kind: 'held', since: at(-DAY), by: 'alice', reason: 'opening hours' },
          ],
          since: at(-2 * DAY),
        },
      ],
      counts: { offline: 1, 'rollout-halted': 1, 'nodes-not-ready': 0, 'certificate-expiring': 0, held: 1 },
      haltedRollouts: [{ name: 'web', haltReason: '1 cluster failed', since: at(-2 * DAY), clusters: 12 }],
      isRolloutStateKnown: true,
      offlineForSeconds: 0,
      certsWithinDays: 30,
      now: at(0),
    };
    expect(renderAttentionList(list).split('\n')).toEqual([
      'NAME    STATE         LAST SEEN  SINCE   REASONS',
      'shop-2  Disconnected  5m ago     5m ago  offline 5m',
      'shop-1  Connected     connected  2d ago  rollout web halted (waiting here); held by alice: opening hours',
      '',
      'Halted rollouts:',
      '  web (12 clusters), halted 2d ago: 1 cluster failed',
    ]);
  });

  it('says so when nothing needs attention, and when the replica cannot tell about rollouts', () => {
    const text = renderAttentionList({
      total: 0,
      rows: [],
      counts: { offline: 0, 'rollout-halted': 0, 'nodes-not-ready': 0, 'certificate-expiring': 0, held: 0 },
      haltedRollouts: [],
      isRolloutStateKnown: false,
      offlineForSeconds: 0,
      certsWithinDays: 30,
      now: at(0),
    });
    expect(text).toContain('No cluster needs attention.');
    expect(text).toContain('does not run the rollout controller: halted rollouts are not shown');
  });
});

describe('hub rollout status --clusters', () => {
  it('shows when a cluster not connected now was last seen, as an age', () => {
    const zero = { waiting: 0, held: 0, 'offline-pending': 0, applying: 0, progressing: 0, ready: 0, failed: 0 };
    const view: RolloutStatusView = {
      name: 'web',
      revision: 1,
      state: 'progressing',
      statusVersion: 1,
      owner: 'alice',
      currentWave: 0,
      waves: [],
      counts: zero,
      summaries: [],
      clusters: [
        { cluster: 'shop-1', wave: 0, phase: 'ready' },
        { cluster: 'shop-2', wave: 0, phase: 'offline-pending', lastSeen: at(-2 * DAY), message: 'last seen …' },
      ],
      updatedAt: at(0),
    };
    const lines = renderRolloutStatus(view, NOW).split('\n');
    expect(lines.slice(-3)).toEqual([
      'CLUSTER  WAVE  PHASE            COPY REVISION  LAST SEEN  MESSAGE',
      'shop-1   1     ready            -              -',
      'shop-2   1     offline-pending  -              2d ago     last seen …',
    ]);
  });
});
