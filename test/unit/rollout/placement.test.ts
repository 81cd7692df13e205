import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchesSelector, parseLabelSelector } from '../../../src/kube/label-selector.js';
import { placedClusters, placementOutsideScope, selectorImplies, wavesOf } from '../../../src/rollout/placement.js';
import { DEFAULT_STRATEGY } from '../../../src/rollout/spec.js';

const clusters = [
  { name: 'c', labels: { env: 'prod', region: 'eu' } },
  { name: 'a', labels: { env: 'prod', region: 'us' } },
  { name: 'b', labels: { env: 'dev', region: 'eu' } },
];

describe('placedClusters', () => {
  it('takes clusters by selector, by name, or both, sorted, within the scope', () => {
    expect(placedClusters({ selector: parseLabelSelector('env=prod') }, clusters)).toEqual(['a', 'c']);
    expect(placedClusters({ clusters: ['b', 'c', 'zz'] }, clusters)).toEqual(['b', 'c']);
    expect(placedClusters({ selector: parseLabelSelector('region=eu'), clusters: ['c'] }, clusters)).toEqual(['c']);
    expect(placedClusters({ selector: parseLabelSelector('') }, clusters, parseLabelSelector('region=eu'))).toEqual([
      'b',
      'c',
    ]);
  });
});

describe('wavesOf', () => {
  const names = (n: number) => Array.from({ length: n }, (_, i) => `c${String(i).padStart(5, '0')}`);

  it('splits a canary, then 10 %, then the rest', () => {
    const waves = wavesOf(DEFAULT_STRATEGY, names(100));
    expect(waves.map((wave) => wave.length)).toEqual([1, 9, 90]);
  });

  it('every cluster is in exactly one wave, in order, and no wave is empty', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 3000 }),
        fc.array(fc.oneof(fc.record({ count: fc.nat(50) }), fc.record({ percent: fc.integer({ min: 0, max: 100 }) })), {
          minLength: 1,
          maxLength: 6,
        }),
        (n, waves) => {
          const all = names(n);
          const split = wavesOf({ ...DEFAULT_STRATEGY, waves }, all);
          expect(split.flat()).toEqual(all);
          expect(split.every((wave) => wave.length > 0)).toBe(true);
          expect(split.length).toBeLessThanOrEqual(waves.length);
        },
      ),
      { numRuns: 500, seed: 11 },
    );
  });
});

describe('scope of a hub user', () => {
  it('lets a selector that carries the scope through, and refuses one that could reach further', () => {
    const placement = (text: string) => ({ selector: parseLabelSelector(text), selectorText: text });
    expect(placementOutsideScope(placement('env=dev,app=web'), 'env=dev', clusters)).toBeUndefined();
    expect(placementOutsideScope(placement('app=web'), 'env=dev', clusters)).toContain(
      'can reach clusters outside yours',
    );
    expect(placementOutsideScope(placement('env!=prod'), 'env=dev', clusters)).toContain('outside yours');
    expect(placementOutsideScope(placement('app=web'), '', clusters)).toBeUndefined();
  });

  it('checks named clusters against the scope', () => {
    expect(placementOutsideScope({ clusters: ['b'] }, 'env=dev', clusters)).toBeUndefined();
    expect(placementOutsideScope({ clusters: ['b', 'c', 'nope'] }, 'env=dev', clusters)).toBe(
      'the clusters "c", "nope" are not within your clusters (env=dev)',
    );
  });

  it('selectorImplies is sound: whatever labels a cluster has, a match of the selector is a match of the scope', () => {
    const key = fc.constantFrom('env', 'region', 'app');
    const value = fc.constantFrom('a', 'b');
    const term = fc.oneof(
      fc.tuple(key, value).map(([k, v]) => `${k}=${v}`),
      fc.tuple(key, value).map(([k, v]) => `${k}!=${v}`),
      key,
      key.map((k) => `!${k}`),
    );
    const selector = fc.array(term, { maxLength: 3 }).map((terms) => terms.join(','));
    const labels = fc.dictionary(key, value);
    fc.assert(
      fc.property(selector, selector, labels, (a, b, cluster) => {
        const selectorA = parseLabelSelector(a);
        const scope = parseLabelSelector(b);
        if (selectorImplies(selectorA, scope) && matchesSelector(selectorA, cluster)) {
          expect(matchesSelector(scope, cluster)).toBe(true);
        }
      }),
      { numRuns: 3000, seed: 5 },
    );
  });
});
