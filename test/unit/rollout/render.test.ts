import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ROLLOUT_LABEL,
  ROLLOUT_REVISION_ANNOTATION,
  copyRevisionOf,
  mergePatch,
  renderCopy,
} from '../../../src/rollout/render.js';
import { rollout } from './fixtures.js';

const store42 = { name: 'store-042', labels: { env: 'prod', region: 'eu' }, properties: { tag: '2.1' } };

function copyOf(result: ReturnType<typeof renderCopy>) {
  if (!result.ok) throw new Error(`render failed: ${result.failure.field}: ${result.failure.message}`);
  return result.copy;
}

describe('renderCopy', () => {
  it("fills placeholders from the cluster's name, labels and properties", () => {
    const copy = copyOf(renderCopy(rollout(), 3, store42));
    const configMap = copy.objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> };
    expect(configMap.data).toEqual({ site: 'store-042', region: 'eu' });
    const deployment = copy.objects.find((o) => o.kind === 'Deployment') as unknown as {
      spec: { template: { spec: { containers: Array<{ image: string }> } } };
    };
    expect(deployment.spec.template.spec.containers[0]?.image).toBe('registry.local/web:2.1');
  });

  it('uses the fallback when the cluster has no such property, and $${ for a literal', () => {
    const spec = rollout();
    (spec.resources[1] as unknown as { data: Record<string, string> }).data['literal'] = 'cost $${HOME}';
    const copy = copyOf(renderCopy(spec, 1, { ...store42, properties: {} }));
    const deployment = JSON.stringify(copy.objects.find((o) => o.kind === 'Deployment'));
    expect(deployment).toContain('registry.local/web:1.0');
    expect(
      (copy.objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data['literal'],
    ).toBe('cost ${HOME}');
  });

  it('fails for one cluster, naming the field, when a label is missing; nothing is rendered', () => {
    const result = renderCopy(rollout(), 1, { ...store42, labels: { env: 'prod' } });
    expect(result).toEqual({
      ok: false,
      failure: {
        field: 'spec.resources[1].data.region',
        message: 'cluster "store-042" has no label "region" and the placeholder has no fallback',
      },
    });
  });

  it('refuses an unknown placeholder', () => {
    const spec = rollout();
    (spec.resources[1] as unknown as { data: Record<string, string> }).data['x'] = '${env:HOME}';
    const result = renderCopy(spec, 1, store42);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.failure.message).toContain('unknown placeholder "${env:HOME}"');
  });

  it('applies patches only to matching clusters and objects', () => {
    const spec = rollout({
      customization: {
        patches: [{ clusterSelector: 'region=eu', target: { kind: 'Deployment' }, patch: { spec: { replicas: 3 } } }],
      },
    });
    const eu = copyOf(renderCopy(spec, 1, store42));
    const us = copyOf(renderCopy(spec, 1, { ...store42, name: 'store-007', labels: { env: 'prod', region: 'us' } }));
    const replicas = (copy: typeof eu) =>
      (copy.objects.find((o) => o.kind === 'Deployment') as unknown as { spec: { replicas: number } }).spec.replicas;
    expect(replicas(eu)).toBe(3);
    expect(replicas(us)).toBe(1);
    expect((eu.objects.find((o) => o.kind === 'ConfigMap') as unknown as { spec?: unknown }).spec).toBeUndefined();
  });

  it('orders namespaces first and marks every object with the rollout and the copy revision', () => {
    const copy = copyOf(renderCopy(rollout(), 7, store42));
    expect(copy.objects.map((o) => o.kind)).toEqual(['Namespace', 'Deployment', 'ConfigMap']);
    expect(copy.revision).toMatch(/^7-[0-9a-f]{12}$/);
    for (const object of copy.objects) {
      expect(object.metadata['labels']).toMatchObject({ [ROLLOUT_LABEL]: 'web' });
      expect(object.metadata['annotations']).toMatchObject({ [ROLLOUT_REVISION_ANNOTATION]: copy.revision });
    }
  });

  it('gives two clusters with the same values the same copy hash, and a changed value another', () => {
    const a = copyOf(renderCopy(rollout(), 1, store42));
    const b = copyOf(renderCopy(rollout(), 1, { ...store42, properties: { tag: '2.1' } }));
    const c = copyOf(renderCopy(rollout(), 1, { ...store42, properties: { tag: '2.2' } }));
    expect(a.revision).toBe(b.revision);
    expect(a.revision).not.toBe(c.revision);
  });
});

describe('mergePatch (RFC 7386)', () => {
  it('merges objects, deletes with null and replaces arrays', () => {
    expect(mergePatch({ a: 1, b: { c: 2, d: 3 }, e: [1, 2] }, { b: { c: null, x: 1 }, e: [3] })).toEqual({
      a: 1,
      b: { d: 3, x: 1 },
      e: [3],
    });
  });
});

describe('the copy revision without rendering (copyRevisionOf)', () => {
  /** Placeholders with and without fallbacks, in values and keys, and patches that are safe or touch a name or kind. */
  const spec = rollout({
    resources: [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'site-${label:tier|std}', namespace: 'shop' },
        data: { region: '${label:region}', '${property:key|k}': '${property:tag|1.0}', literal: '$${x}' },
      },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
    ],
    customization: {
      patches: [
        { clusterSelector: 'region=eu', target: { kind: 'ConfigMap' }, patch: { data: { eu: '${property:eu}' } } },
        { clusterSelector: 'tier=gold', target: { kind: 'ConfigMap' }, patch: { metadata: { name: null } } },
        { clusterSelector: 'zone=north', target: { kind: 'ConfigMap' }, patch: { data: { zoned: 'yes' } } },
        { clusterSelector: 'tier=silver', target: { kind: 'Namespace' }, patch: { kind: '${label:kind|Namespace}' } },
      ],
    },
  });
  const value = fc.constantFrom('eu', 'us', 'gold', 'silver', 'std', 'north', 'Namespace', 'Secret');
  const cluster = fc.record({
    name: fc.constantFrom('a', 'b', 'c'),
    labels: fc.dictionary(fc.constantFrom('region', 'tier', 'kind', 'zone'), value),
    properties: fc.dictionary(fc.constantFrom('tag', 'key', 'eu'), value),
  });

  it('agrees with rendering on every cluster: the same outcome, the same failure, the same revision', () => {
    fc.assert(
      fc.property(cluster, (facts) => {
        const rendered = renderCopy(spec, 4, facts);
        const named = copyRevisionOf(spec, 4, facts);
        if (rendered.ok) expect(named).toEqual({ ok: true, revision: rendered.copy.revision });
        else expect(named).toEqual(rendered);
      }),
      { numRuns: 400 },
    );
  });

  it('names two clusters alike exactly when their copies are alike', () => {
    // The other cluster is the first with one label or property changed or removed, or another cluster.
    const edit = fc.record({
      on: fc.constantFrom('labels' as const, 'properties' as const),
      key: fc.constantFrom('region', 'tier', 'kind', 'zone', 'tag', 'key', 'eu'),
      value: fc.option(value),
    });
    fc.assert(
      fc.property(cluster, fc.oneof(edit, cluster), (one, change) => {
        let other = change as typeof one;
        if ('on' in change) {
          const values: Record<string, string> = { ...one[change.on] };
          if (change.value === null) delete values[change.key];
          else values[change.key] = change.value;
          other = { ...one, [change.on]: values };
        }
        const [a, b] = [renderCopy(spec, 4, one), renderCopy(spec, 4, other)];
        fc.pre(a.ok && b.ok);
        if (!a.ok || !b.ok) return;
        // Copies that differ never share a revision (a cluster is never left on another's copy).
        if (JSON.stringify(a.copy.objects) !== JSON.stringify(b.copy.objects)) {
          expect(a.copy.revision).not.toBe(b.copy.revision);
        }
        // A revision names one copy.
        if (a.copy.revision === b.copy.revision) expect(a.copy.objects).toEqual(b.copy.objects);
      }),
      { numRuns: 400 },
    );
  });

  it('gives every cluster of a Rollout without per-cluster values one revision', () => {
    const plain = rollout({
      resources: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'shop' }, data: {} }],
    });
    const revisions = ['a', 'b', 'c'].map((name) => copyRevisionOf(plain, 2, { name, labels: {}, properties: {} }));
    expect(new Set(revisions.map((r) => (r.ok ? r.revision : 'failed'))).size).toBe(1);
  });
});
