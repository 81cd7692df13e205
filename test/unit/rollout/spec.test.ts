import { describe, expect, it } from 'vitest';
import { DEFAULT_STRATEGY, parseClusterCount, parseRollout, resolveClusterCount } from '../../../src/rollout/spec.js';
import { rollout, rolloutDocument } from './fixtures.js';

function refusal(document: unknown): string {
  try {
    parseRollout(document);
  } catch (error) {
    expect(error).toMatchObject({ code: 'E_ROLLOUT_INVALID', exitCode: 3 });
    return (error as Error).message;
  }
  throw new Error('expected the document to be refused');
}

describe('parseRollout', () => {
  it('reads a document with the default strategy', () => {
    const spec = rollout();
    expect(spec.name).toBe('web');
    expect(spec.resources).toHaveLength(3);
    expect(spec.placement.selectorText).toBe('env=prod');
    expect(spec.strategy).toEqual(DEFAULT_STRATEGY);
  });

  it('reads waves, budgets and times', () => {
    const spec = rollout({
      strategy: {
        waves: [{ clusters: 1 }, { clusters: '25%' }, '100%'],
        maxUnavailable: 2,
        failureBudget: '5%',
        soakSeconds: 60,
        deadlineSeconds: 300,
      },
    });
    expect(spec.strategy).toEqual({
      waves: [{ count: 1 }, { percent: 25 }, { percent: 100 }],
      maxUnavailable: { count: 2 },
      failureBudget: { percent: 5 },
      soakMs: 60_000,
      deadlineMs: 300_000,
      onFailure: 'halt',
    });
  });

  it.each([
    [{ ...rolloutDocument(), apiVersion: 'v1' }, 'Rollout apiVersion: must be edgeadm.io/v1alpha1'],
    [{ ...rolloutDocument(), metadata: { name: 'Web_1' } }, 'Rollout metadata.name'],
    [rolloutDocument({ resources: [] }), 'Rollout spec.resources: must list at least one'],
    [rolloutDocument({ placement: {} }), 'Rollout spec.placement: needs clusterSelector, clusters or both'],
    [rolloutDocument({ placement: { clusterSelector: 'env=' + 'x'.repeat(70) } }), 'spec.placement.clusterSelector'],
    [
      rolloutDocument({ strategy: { waves: [{ clusters: '150%' }] } }),
      'spec.strategy.waves[0].clusters: a percentage is at most 100%',
    ],
    [rolloutDocument({ strategy: { waves: [-1] } }), 'spec.strategy.waves[0]: must be a whole number'],
    [rolloutDocument({ strategy: { soakSeconds: 1e308 } }), 'spec.strategy.soakSeconds'],
    [
      rolloutDocument({ status: { summaries: [{ name: 'a', reduce: 'avg', field: '.x' }] } }),
      'spec.status.summaries[0].reduce',
    ],
    [
      rolloutDocument({ status: { summaries: [{ name: 'a', reduce: 'min', field: 'status.x' }] } }),
      'spec.status.summaries[0].field',
    ],
  ])('refuses a mistake, naming the field (%#)', (document, words) => {
    expect(refusal(document)).toContain(words);
  });

  it('refuses the same object listed twice', () => {
    const document = rolloutDocument();
    const resources = (document['spec'] as { resources: unknown[] }).resources;
    resources.push(structuredClone(resources[1]));
    expect(refusal(document)).toContain(
      'spec.resources[3]: is the same object as spec.resources[1] (/ConfigMap/shop/site)',
    );
  });
});

describe('cluster counts', () => {
  it('reads numbers and percentages, and percentages round up', () => {
    expect(parseClusterCount(3, 'x')).toEqual({ count: 3 });
    expect(parseClusterCount('3', 'x')).toEqual({ count: 3 });
    expect(resolveClusterCount({ percent: 1 }, 10)).toBe(1);
    expect(resolveClusterCount({ percent: 10 }, 2000)).toBe(200);
    expect(resolveClusterCount({ count: 50 }, 10)).toBe(10);
  });
});

describe('parseRollout: unknown fields (issue #30)', () => {
  it('refuses a typo naming the field and the expected names, at every level a Rollout defines', () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { strategy: { waves: [1, '100%'], soakSecond: 120 } },
        /spec\.strategy\.soakSecond: unknown field \(expected one of: waves, maxUnavailable, failureBudget, soakSeconds, deadlineSeconds, onFailure\)/,
      ],
      [
        { placement: { clusterSelecter: 'env=prod' } },
        /spec\.placement\.clusterSelecter: unknown field \(expected one of: clusterSelector, clusters\)/,
      ],
      [{ strategy: { waves: [{ cluster: 1 }] } }, /spec\.strategy\.waves\[0\]\.cluster: unknown field/],
      [
        { customization: { patches: [{ clusterSelector: '', patch: {}, traget: {} }] } },
        /spec\.customization\.patches\[0\]\.traget: unknown field/,
      ],
      [
        { status: { summaries: [{ name: 'a', reduce: 'count', field: '.a', kindd: 'X' }] } },
        /spec\.status\.summaries\[0\]\.kindd/,
      ],
      [
        { placment: {} },
        /spec\.placment: unknown field \(expected one of: resources, placement, customization, strategy, status\)/,
      ],
    ];
    for (const [spec, message] of cases) {
      expect(() => parseRollout(rolloutDocument(spec)), JSON.stringify(spec)).toThrow(message);
    }
    expect(() => parseRollout({ ...rolloutDocument(), spce: {} })).toThrow(/Rollout spce: unknown field/);
  });

  it('reads a stored document with fields it does not know when told it is not strict, and leaves objects unchecked', () => {
    const stored = rolloutDocument({ strategy: { soakSecond: 120 } });
    expect(parseRollout(stored, { isStrict: false }).strategy.soakMs).toBe(30_000);
    const resources = (rolloutDocument()['spec'] as { resources: Record<string, unknown>[] }).resources;
    resources[0]!['anything'] = { goes: true };
    expect(() => parseRollout(rolloutDocument({ resources }))).not.toThrow();
  });
});

describe('parseRollout: onFailure', () => {
  it('halts by default, takes rollback, and refuses anything else naming the field', () => {
    expect(rollout().strategy.onFailure).toBe('halt');
    expect(rollout({ strategy: { onFailure: 'rollback' } }).strategy.onFailure).toBe('rollback');
    expect(() => rollout({ strategy: { onFailure: 'retry' } })).toThrow(
      /spec\.strategy\.onFailure: must be halt or rollback/,
    );
  });
});
