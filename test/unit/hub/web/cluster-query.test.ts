/**
 * The clusters list and fleet summary of the web view
 * (src/hub/web/cluster-query.ts), with generated fleets: a page never holds
 * more than asked (nor more than the bound), the total counts every match,
 * filters agree with the label selector rule, sorting is total and stable
 * by name, and the summary's counts add up.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchesSelector, parseLabelSelector } from '../../../../src/kube/label-selector.js';
import type { ClusterView } from '../../../../src/hub/contract/views.js';
import {
  fleetSummary,
  offlineBucket,
  parseClusterQuery,
  queryClusters,
  OFFLINE_BUCKETS,
} from '../../../../src/hub/web/cluster-query.js';
import { MAX_PAGE_SIZE } from '../../../../src/hub/web/limits.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');

const clusterArb: fc.Arbitrary<ClusterView> = fc
  .record({
    name: fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/),
    labels: fc.record(
      { env: fc.constantFrom('prod', 'dev'), region: fc.constantFrom('eu', 'us', 'ap') },
      { requiredKeys: [] },
    ),
    state: fc.constantFrom('Connected' as const, 'Disconnected' as const),
    lastSeen: fc.option(
      fc.integer({ min: 0, max: 3 * 86_400_000 }).map((ago) => new Date(NOW - ago).toISOString()),
      { nil: undefined },
    ),
    kubernetesVersion: fc.option(fc.constantFrom('v1.30.4', 'v1.31.0', 'v1.29.9'), { nil: undefined }),
    nodeCount: fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }),
    registeredAt: fc.constant('2026-01-01T00:00:00Z'),
    certNotAfter: fc.constant('2027-01-01T00:00:00Z'),
  })
  .chain((cluster) =>
    fc
      .boolean()
      .map((isHeld): ClusterView =>
        isHeld
          ? { ...cluster, hold: { reason: 'opening hours', by: 'alice', since: '2026-06-01T11:00:00Z' } }
          : cluster,
      ),
  );
const fleetArb = fc.uniqueArray(clusterArb, { selector: (c) => c.name, maxLength: 60 });

describe('queryClusters', () => {
  it('returns at most one page, and a total of every match of the selector and text', () => {
    fc.assert(
      fc.property(
        fleetArb,
        fc.constantFrom('', 'env=prod', 'region!=eu', 'env=dev,region'),
        fc.constantFrom('', 'a', 'eu'),
        fc.integer({ min: 1, max: MAX_PAGE_SIZE }),
        fc.integer({ min: 0, max: 70 }),
        (fleet, selector, q, limit, offset) => {
          const query = parseClusterQuery(
            new URLSearchParams({ selector, q, limit: String(limit), offset: String(offset) }),
          );
          const page = queryClusters(fleet, query, NOW);
          const parsed = parseLabelSelector(selector);
          const matching = fleet.filter(
            (c) =>
              matchesSelector(parsed, c.labels) &&
              (c.name.includes(q) || Object.entries(c.labels).some(([k, v]) => k.includes(q) || v.includes(q))),
          );
          expect(page.total).toBe(matching.length);
          expect(page.clusters.length).toBe(Math.max(0, Math.min(limit, matching.length - offset)));
          const names = page.clusters.map((c) => c.name);
          expect(names).toEqual([...names].sort());
        },
      ),
    );
  });

  it('sorts by every column with the name breaking ties, both ways', () => {
    fc.assert(
      fc.property(fleetArb, fc.constantFrom('name', 'state', 'lastSeen', 'version', 'nodes'), (fleet, sort) => {
        const all = (order: string) =>
          queryClusters(fleet, parseClusterQuery(new URLSearchParams({ sort, order, limit: '200' })), NOW).clusters.map(
            (c) => c.name,
          );
        const ascending = all('asc');
        expect(all('desc')).toEqual([...ascending].reverse());
        expect(new Set(ascending).size).toBe(fleet.length);
        if (sort === 'state') {
          const states = queryClusters(
            fleet,
            parseClusterQuery(new URLSearchParams({ sort, limit: '200' })),
            NOW,
          ).clusters.map((c) => c.state);
          // Disconnected first: what needs attention.
          expect(states).toEqual([...states].sort((a, b) => (a === b ? 0 : a === 'Disconnected' ? -1 : 1)));
        }
      }),
    );
  });

  it('filters by state, version and time offline exactly as the summary counts them', () => {
    fc.assert(
      fc.property(fleetArb, (fleet) => {
        const summary = fleetSummary(fleet, NOW);
        const total = (params: Record<string, string>) =>
          queryClusters(fleet, parseClusterQuery(new URLSearchParams({ ...params, limit: '1' })), NOW).total;
        expect(total({ state: 'Connected' })).toBe(summary.connected);
        expect(total({ state: 'Disconnected' })).toBe(summary.disconnected);
        for (const bucket of OFFLINE_BUCKETS) expect(total({ offline: bucket })).toBe(summary.offline[bucket]);
        for (const version of summary.versions) expect(total({ version: version.value })).toBe(version.count);
        expect(total({ held: 'true' })).toBe(summary.held);
        expect(summary.held).toBe(fleet.filter((c) => c.hold !== undefined).length);
        for (const label of summary.labels) {
          for (const value of label.values) {
            expect(total({ selector: `${label.key}=${value.value}` })).toBe(value.count);
          }
        }
        expect(summary.connected + summary.disconnected).toBe(fleet.length);
      }),
    );
  });

  it('refuses pages past the bound and unknown parameters values with a 400', () => {
    const refused: Record<string, string>[] = [
      { limit: String(MAX_PAGE_SIZE + 1) },
      { limit: '-1' },
      { offset: '1e3' },
      { sort: 'password' },
      { order: 'sideways' },
      { state: 'Ready' },
      { held: 'yes' },
      { offline: 'forever' },
      { selector: 'env=prod,,' },
      { q: 'x'.repeat(201) },
    ];
    for (const params of refused) {
      expect(() => parseClusterQuery(new URLSearchParams(params)), JSON.stringify(params)).toThrow(
        expect.objectContaining({ status: 400 }),
      );
    }
  });
});

describe('offlineBucket', () => {
  it('puts a cluster in the bucket of how long ago it was last seen', () => {
    const seen = (ms: number): ClusterView => ({
      name: 'a',
      labels: {},
      state: 'Disconnected',
      lastSeen: new Date(NOW - ms).toISOString(),
      registeredAt: '',
      certNotAfter: '',
    });
    expect(offlineBucket(seen(4 * 60_000), NOW)).toBe('lt5m');
    expect(offlineBucket(seen(5 * 60_000), NOW)).toBe('lt1h');
    expect(offlineBucket(seen(2 * 3_600_000), NOW)).toBe('lt1d');
    expect(offlineBucket(seen(25 * 3_600_000), NOW)).toBe('gte1d');
    expect(offlineBucket({ ...seen(0), lastSeen: undefined }, NOW)).toBe('never');
  });
});
