/**
 * Which clusters need attention and why (src/hub/attention/attention.ts):
 * each reason at its threshold and just past it, the agent's own hub
 * certificate counted only once its renewal is overdue, reasons in severity
 * order; and the list over generated fleets: bounded pages, totals and
 * counts that agree with the reasons, sorting total and reversible.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseLabelSelector, matchesSelector } from '../../../../src/kube/label-selector.js';
import {
  haltedTargets,
  queryAttention,
  reasonsOf,
  type AttentionRules,
  type HaltedRollout,
} from '../../../../src/hub/attention/attention.js';
import { parseAttentionQuery } from '../../../../src/hub/attention/attention-query.js';
import { HUB_CLIENT_CERT_OVERDUE_WITHIN_MS, MAX_ATTENTION_PAGE_SIZE } from '../../../../src/hub/attention/limits.js';
import { ATTENTION_REASON_KINDS, type AttentionReasonKind } from '../../../../src/hub/contract/attention.js';
import type { ClusterHealthView, ClusterView } from '../../../../src/hub/contract/views.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const DAY = 86_400_000;
const at = (offsetMs: number): string => new Date(NOW + offsetMs).toISOString();

/** A connected cluster that needs nothing: its hub certificate fresh (29 days left). */
function healthy(name = 'shop-1', extra: Partial<ClusterView> = {}): ClusterView {
  return {
    name,
    labels: { env: 'prod' },
    state: 'Connected',
    lastSeen: at(0),
    registeredAt: at(-90 * DAY),
    certNotAfter: at(29 * DAY),
    ...extra,
  };
}

function health(extra: Partial<ClusterHealthView> = {}): ClusterHealthView {
  return { reportedAt: at(-5_000), certificates: [], ...extra };
}

function rules(extra: Partial<AttentionRules> = {}): AttentionRules {
  return { now: NOW, offlineForMs: 0, certsWithinMs: 30 * DAY, halted: new Map(), ...extra };
}

const kinds = (cluster: ClusterView, extra: Partial<AttentionRules> = {}): AttentionReasonKind[] =>
  reasonsOf(cluster, rules(extra)).map((reason) => reason.kind);

describe('reasonsOf', () => {
  it('finds nothing wrong with a connected cluster whose agent renews its certificate', () => {
    expect(reasonsOf(healthy(), rules())).toEqual([]);
    // With a third of its life left the agent renews it: still nothing, though within 30 days.
    expect(kinds(healthy('a', { certNotAfter: at(10 * DAY) }))).toEqual([]);
  });

  it('lists every disconnected cluster as offline by default, since it was last seen', () => {
    const cut = healthy('a', { state: 'Disconnected', lastSeen: at(-1_000) });
    expect(reasonsOf(cut, rules())).toEqual([{ kind: 'offline', since: at(-1_000), isNeverConnected: false }]);
  });

  it('lists a disconnected cluster as offline once it has been away for offlineFor, not before', () => {
    const cut = (awayMs: number) => healthy('a', { state: 'Disconnected', lastSeen: at(-awayMs) });
    expect(kinds(cut(59_999), { offlineForMs: 60_000 })).toEqual([]);
    expect(kinds(cut(60_000), { offlineForMs: 60_000 })).toEqual(['offline']);
  });

  it('reads times written another way than the hub writes them, and is not fooled by one that is no time', () => {
    // Without milliseconds, or with an offset: parsed, not compared as text.
    const seen = (lastSeen: string) => healthy('a', { state: 'Disconnected', lastSeen });
    const noMs = (ms: number) => at(ms).replace(/\.\d{3}Z$/, 'Z');
    expect(kinds(seen(noMs(-59_000)), { offlineForMs: 60_000 })).toEqual([]);
    expect(kinds(seen(noMs(-60_000)), { offlineForMs: 60_000 })).toEqual(['offline']);
    expect(kinds(seen('2026-06-01T13:59:30+02:00'), { offlineForMs: 60_000 })).toEqual([]);
    expect(kinds(seen('2026-06-01T13:58:30+02:00'), { offlineForMs: 60_000 })).toEqual(['offline']);
    // A disconnected cluster whose last-seen time cannot be read is listed, not hidden.
    expect(kinds(seen('yesterday'), { offlineForMs: DAY })).toEqual(['offline']);
    const certificate = (notAfter: string) =>
      healthy('a', { health: health({ certificates: [{ kind: 'cluster-ca', subject: 'CN=ca', notAfter }] }) });
    expect(kinds(certificate(noMs(30 * DAY)))).toEqual(['certificate-expiring']);
    expect(kinds(certificate(noMs(30 * DAY + 1_000)))).toEqual([]);
  });

  it('lists a cluster that never connected as offline since its registration, whatever the threshold', () => {
    const never = healthy('a', { state: 'Disconnected', lastSeen: undefined });
    expect(reasonsOf(never, rules({ offlineForMs: 365 * DAY }))).toEqual([
      { kind: 'offline', since: never.registeredAt, isNeverConnected: true },
    ]);
  });

  it('names the nodes that are not Ready, and nothing when all are', () => {
    const nodes = { total: 3, ready: 2, notReady: ['node-b'] };
    expect(reasonsOf(healthy('a', { health: health({ nodes }) }), rules())).toEqual([
      { kind: 'nodes-not-ready', ready: 2, total: 3, notReady: ['node-b'], reportedAt: at(-5_000) },
    ]);
    expect(kinds(healthy('a', { health: health({ nodes: { total: 3, ready: 3, notReady: [] } }) }))).toEqual([]);
    // An agent that may not list nodes reports none: no reason either way.
    expect(kinds(healthy('a', { health: health() }))).toEqual([]);
  });

  it('lists certificates expiring within certsWithin (expired ones too), soonest first, and no later ones', () => {
    const certificates = [
      { kind: 'cluster-ca' as const, subject: 'CN=k3s-server-ca', notAfter: at(30 * DAY + 1) },
      { kind: 'apiserver-serving' as const, subject: 'CN=kube-apiserver', notAfter: at(30 * DAY) },
      { kind: 'apiserver-serving' as const, subject: 'CN=old', notAfter: at(-DAY) },
      { kind: 'cluster-ca' as const, subject: 'CN=garbled', notAfter: 'not a time' },
    ];
    const [reason] = reasonsOf(healthy('a', { health: health({ certificates }) }), rules());
    expect(reason).toEqual({
      kind: 'certificate-expiring',
      certificates: [certificates[2], certificates[1]],
    });
    expect(kinds(healthy('a', { health: health({ certificates }) }), { certsWithinMs: 0 })).toEqual([
      'certificate-expiring',
    ]);
  });

  it("counts the agent's hub certificate from the hub's record once its renewal is overdue", () => {
    const due = healthy('a', { certNotAfter: at(HUB_CLIENT_CERT_OVERDUE_WITHIN_MS) });
    expect(reasonsOf(due, rules())).toEqual([
      {
        kind: 'certificate-expiring',
        certificates: [{ kind: 'hub-client', subject: 'CN=a,O=edgeadm:hub:clusters', notAfter: due.certNotAfter }],
      },
    ]);
    expect(kinds({ ...due, certNotAfter: at(HUB_CLIENT_CERT_OVERDUE_WITHIN_MS + 1) })).toEqual([]);
    // A smaller certsWithin is smaller still.
    expect(kinds(due, { certsWithinMs: DAY })).toEqual([]);
    // The agent's own report of it is not read: the hub issued it and knows a renewal first.
    const reported = health({ certificates: [{ kind: 'hub-client', subject: 'CN=a', notAfter: at(-DAY) }] });
    expect(kinds(healthy('a', { health: reported }))).toEqual([]);
  });

  it('names the halted rollouts that place a cluster, with its phase in each', () => {
    const halted: HaltedRollout[] = [
      { name: 'web', since: at(-2 * DAY), clusters: new Map([['a', 'failed' as const]]) },
      {
        name: 'dns',
        since: at(-DAY),
        clusters: new Map([
          ['a', 'waiting' as const],
          ['b', 'ready' as const],
        ]),
      },
    ];
    const [reason] = reasonsOf(healthy('a'), rules({ halted: haltedTargets(halted) }));
    expect(reason).toEqual({
      kind: 'rollout-halted',
      since: at(-2 * DAY),
      rollouts: [
        { rollout: 'web', phase: 'failed' },
        { rollout: 'dns', phase: 'waiting' },
      ],
    });
    expect(kinds(healthy('c'), { halted: haltedTargets(halted) })).toEqual([]);
  });

  it('gives every reason of a cluster, most severe first', () => {
    const everything = healthy('a', {
      state: 'Disconnected',
      lastSeen: at(-DAY),
      certNotAfter: at(DAY),
      hold: { reason: 'opening hours', by: 'alice', since: at(-3 * DAY) },
      health: health({ nodes: { total: 2, ready: 1, notReady: ['n2'] } }),
    });
    const halted = haltedTargets([{ name: 'web', since: at(0), clusters: new Map([['a', 'failed' as const]]) }]);
    expect(kinds(everything, { halted })).toEqual(ATTENTION_REASON_KINDS);
  });
});

/** A generated fleet: each cluster with or without each reason. */
const clusterArb: fc.Arbitrary<ClusterView> = fc
  .record({
    name: fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/),
    env: fc.constantFrom('prod', 'dev'),
    isConnected: fc.boolean(),
    awayMs: fc.option(fc.integer({ min: 0, max: 3 * DAY }), { nil: undefined }),
    certDays: fc.integer({ min: -5, max: 29 }),
    isHeld: fc.boolean(),
    notReady: fc.integer({ min: 0, max: 2 }),
    serving: fc.option(fc.integer({ min: -10, max: 400 }), { nil: undefined }),
  })
  .map((c): ClusterView => ({
    name: c.name,
    labels: { env: c.env },
    state: c.isConnected ? 'Connected' : 'Disconnected',
    lastSeen: c.isConnected ? at(0) : c.awayMs === undefined ? undefined : at(-c.awayMs),
    registeredAt: at(-100 * DAY),
    certNotAfter: at(c.certDays * DAY),
    ...(c.isHeld ? { hold: { reason: 'r', by: 'alice', since: at(-DAY) } } : {}),
    health: health({
      nodes: { total: 2, ready: 2 - c.notReady, notReady: [] },
      certificates:
        c.serving === undefined ? [] : [{ kind: 'apiserver-serving', subject: 'x', notAfter: at(c.serving * DAY) }],
    }),
  }));
const fleetArb = fc.uniqueArray(clusterArb, { selector: (c) => c.name, maxLength: 60 });
const haltedArb = (fleet: ClusterView[]): fc.Arbitrary<HaltedRollout[]> =>
  fc.array(
    fc.record({
      name: fc.constantFrom('web', 'dns', 'cache'),
      since: fc.integer({ min: 0, max: 5 * DAY }).map((ms) => at(-ms)),
      clusters: fc
        .subarray(fleet.map((c) => c.name))
        .map((names) => new Map(names.map((name) => [name, 'failed' as const]))),
    }),
    { maxLength: 2 },
  );

describe('queryAttention', () => {
  it('pages the clusters that have a reason, counts each reason, and filters by one', () => {
    fc.assert(
      fc.property(
        fleetArb.chain((fleet) => fc.tuple(fc.constant(fleet), haltedArb(fleet))),
        fc.constantFrom('', 'env=prod'),
        fc.integer({ min: 1, max: MAX_ATTENTION_PAGE_SIZE }),
        fc.integer({ min: 0, max: 70 }),
        ([fleet, halted], selector, limit, offset) => {
          const params = { selector, limit: String(limit), offset: String(offset) };
          const page = queryAttention(fleet, halted, parseAttentionQuery(new URLSearchParams(params)), NOW);
          const r = rules({ halted: haltedTargets(halted) });
          const inScope = fleet.filter((c) => matchesSelector(parseLabelSelector(selector), c.labels));
          const needing = inScope.filter((c) => reasonsOf(c, r).length > 0);
          expect(page.total).toBe(needing.length);
          expect(page.rows.length).toBe(Math.max(0, Math.min(limit, needing.length - offset)));
          for (const kind of ATTENTION_REASON_KINDS) {
            const having = inScope.filter((c) => reasonsOf(c, r).some((reason) => reason.kind === kind));
            expect(page.counts[kind]).toBe(having.length);
            const filtered = queryAttention(
              fleet,
              halted,
              parseAttentionQuery(new URLSearchParams({ selector, reason: kind, limit: '200' })),
              NOW,
            );
            expect(filtered.total).toBe(having.length);
            expect(filtered.rows.every((row) => row.reasons.some((reason) => reason.kind === kind))).toBe(true);
          }
        },
      ),
    );
  });

  it('sorts by every key, both ways, each cluster once', () => {
    fc.assert(
      fc.property(fleetArb, fc.constantFrom('severity', 'name', 'since'), (fleet, sort) => {
        const names = (order: string) =>
          queryAttention(
            fleet,
            [],
            parseAttentionQuery(new URLSearchParams({ sort, order, limit: '200' })),
            NOW,
          ).rows.map((row) => row.cluster.name);
        const ascending = names('asc');
        expect(names('desc')).toEqual([...ascending].reverse());
        expect(new Set(ascending).size).toBe(ascending.length);
      }),
    );
  });

  it('puts the most severe first, then who waited longest; by since, the oldest first and the unknown last', () => {
    const fleet = [
      healthy('held-old', { hold: { reason: 'r', by: 'a', since: at(-9 * DAY) } }),
      healthy('offline-new', { state: 'Disconnected', lastSeen: at(-60_000) }),
      healthy('nodes', { health: health({ nodes: { total: 2, ready: 1, notReady: ['n'] } }) }),
      healthy('offline-old', { state: 'Disconnected', lastSeen: at(-DAY) }),
      healthy('fine'),
      healthy('offline-held', {
        state: 'Disconnected',
        lastSeen: at(-60_000),
        hold: { reason: 'r', by: 'a', since: at(-DAY) },
      }),
    ];
    const names = (params: Record<string, string>) =>
      queryAttention(fleet, [], parseAttentionQuery(new URLSearchParams(params)), NOW).rows.map(
        (row) => row.cluster.name,
      );
    expect(names({})).toEqual(['offline-held', 'offline-old', 'offline-new', 'nodes', 'held-old']);
    expect(names({ sort: 'since' })).toEqual(['held-old', 'offline-held', 'offline-old', 'offline-new', 'nodes']);
    expect(names({ sort: 'name' })).toEqual(['held-old', 'nodes', 'offline-held', 'offline-new', 'offline-old']);
    const page = queryAttention(fleet, [], parseAttentionQuery(new URLSearchParams()), NOW);
    expect(page.rows.find((row) => row.cluster.name === 'offline-held')?.since).toBe(at(-DAY));
    expect(page.rows.find((row) => row.cluster.name === 'nodes')?.since).toBeUndefined();
  });

  it('lists the halted rollouts, and says when the replica does not know them', () => {
    const halted: HaltedRollout[] = [
      { name: 'web', haltReason: '2 failed', since: at(-DAY), clusters: new Map([['shop-1', 'failed' as const]]) },
    ];
    const page = queryAttention([healthy()], halted, parseAttentionQuery(new URLSearchParams()), NOW);
    expect(page).toMatchObject({
      total: 1,
      haltedRollouts: [{ name: 'web', haltReason: '2 failed', since: at(-DAY), clusters: 1 }],
      isRolloutStateKnown: true,
      offlineForSeconds: 0,
      certsWithinDays: 30,
      now: at(0),
    });
    const unknown = queryAttention([healthy()], undefined, parseAttentionQuery(new URLSearchParams()), NOW);
    expect(unknown).toMatchObject({ total: 0, haltedRollouts: [], isRolloutStateKnown: false });
  });
});
