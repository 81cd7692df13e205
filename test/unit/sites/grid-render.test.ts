import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  matchesSelector,
  mergeEnv,
  renderGridService,
  renderSiteService,
  renderWorkload,
  selectSites,
  sharedLabels,
  type GridSite,
} from '../../../src/sites/grid-render.js';
import type { EnvVar } from '../../../src/sites/site-grid.js';
import { grid } from '../../support/site-grid-fixture.js';

const lyon: GridSite = { name: 'lyon', labels: { 'edgeadm.io/site': 'lyon', tier: 'big' } };
const nice: GridSite = { name: 'nice', labels: { 'edgeadm.io/site': 'nice', tier: 'small' } };

interface Rendered {
  metadata: { name: string; labels: Record<string, string>; ownerReferences: unknown[] };
  spec: {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    serviceName?: string;
    template: {
      metadata: { labels: Record<string, string> };
      spec: {
        nodeSelector: Record<string, string>;
        tolerations: unknown[];
        containers: Array<{ name: string; image: string; env?: EnvVar[]; resources?: unknown }>;
      };
    };
  };
}

describe('site grid rendering', () => {
  it("pins a site's copy to the site's nodes, with its own selector, the edge toleration and an owner reference", () => {
    const workload = renderWorkload(grid(), lyon) as unknown as Rendered;
    expect(workload.metadata.name).toBe('menu-lyon');
    expect(workload.spec.template.spec.nodeSelector).toEqual({ 'edgeadm.io/site': 'lyon' });
    expect(workload.spec.selector.matchLabels).toEqual({ 'edgeadm.io/site-grid': 'menu', 'edgeadm.io/site': 'lyon' });
    expect(workload.spec.template.metadata.labels).toEqual({
      app: 'menu',
      'edgeadm.io/site-grid': 'menu',
      'edgeadm.io/site': 'lyon',
    });
    expect(workload.spec.template.spec.tolerations).toEqual([
      { key: 'edgeadm.io/edge', operator: 'Exists', effect: 'NoSchedule' },
    ]);
    expect(workload.metadata.ownerReferences).toEqual([
      { apiVersion: 'edgeadm.io/v1alpha1', kind: 'SiteGrid', name: 'menu', uid: 'uid-1', controller: true },
    ]);
  });

  it('a template that names another site still runs only on the copy’s site', () => {
    const template = grid().spec.workload.template;
    const pinned = grid({
      workload: {
        kind: 'StatefulSet',
        template: { ...template, spec: { ...template.spec, nodeSelector: { 'edgeadm.io/site': 'nice', disk: 'ssd' } } },
      },
    });
    const workload = renderWorkload(pinned, lyon) as unknown as Rendered;
    expect(workload.spec.template.spec.nodeSelector).toEqual({ 'edgeadm.io/site': 'lyon', disk: 'ssd' });
    expect(workload.spec.serviceName).toBe('menu-lyon');
  });

  it('applies the overrides for a site by name and by label, in order, a later one winning', () => {
    const overridden = grid({
      overrides: [
        { siteSelector: { matchLabels: { tier: 'big' } }, replicas: 3, env: [{ name: 'MODE', value: 'big' }] },
        { sites: ['lyon'], container: 'web', image: 'menu:2', env: [{ name: 'CITY', value: 'Lyon' }] },
        { sites: ['nice'], replicas: 5 },
        { sites: ['lyon'], resources: { limits: { memory: '64Mi' } } },
      ],
    });
    const atLyon = renderWorkload(overridden, lyon) as unknown as Rendered;
    expect(atLyon.spec.replicas).toBe(3);
    const [web, sidecar] = atLyon.spec.template.spec.containers;
    expect(web).toEqual({
      name: 'web',
      image: 'menu:2',
      env: [
        { name: 'CITY', value: 'Lyon' },
        { name: 'MODE', value: 'big' },
      ],
      resources: { limits: { memory: '64Mi' } },
    });
    expect(sidecar).toEqual({
      name: 'sidecar',
      image: 'log:1',
      env: [{ name: 'MODE', value: 'big' }],
      resources: { limits: { memory: '64Mi' } },
    });
    const atNice = renderWorkload(overridden, nice) as unknown as Rendered;
    expect(atNice.spec.replicas).toBe(5);
    expect(atNice.spec.template.spec.containers[0]!.image).toBe('menu:1');
  });

  it('selects sites by name and by label, and every site when the grid names none', () => {
    expect(selectSites(grid(), [lyon, nice]).map((s) => s.name)).toEqual(['lyon', 'nice']);
    expect(selectSites(grid({ sites: { names: ['nice'] } }), [lyon, nice]).map((s) => s.name)).toEqual(['nice']);
    const bySelector = grid({
      sites: { selector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['big'] }] } },
    });
    expect(selectSites(bySelector, [lyon, nice]).map((s) => s.name)).toEqual(['lyon']);
  });

  it("renders the site's own Service on that site's pods, and the grid's Service on all of them, labelled for the edge filter", () => {
    const site = renderSiteService(grid(), lyon)!;
    expect(site.metadata?.name).toBe('menu-lyon');
    expect((site.spec as { selector: unknown }).selector).toEqual({
      'edgeadm.io/site-grid': 'menu',
      'edgeadm.io/site': 'lyon',
    });
    const shared = renderGridService(grid())!;
    expect(shared.metadata?.name).toBe('menu');
    expect(shared.metadata?.labels).toEqual({
      'app.kubernetes.io/managed-by': 'edgeadm',
      'edgeadm.io/site-grid': 'menu',
    });
    expect((shared.spec as { selector: unknown }).selector).toEqual({ 'edgeadm.io/site-grid': 'menu' });
    expect(renderGridService(grid({ service: undefined as never }))).toBeUndefined();
  });

  it('takes a site’s labels as those all its nodes share', () => {
    expect(sharedLabels([{ a: '1', b: '2' }, { a: '1', b: '3' }, { a: '1' }])).toEqual({ a: '1' });
    expect(sharedLabels([])).toEqual({});
  });
});

const name = fc.constantFrom('A', 'B', 'C', 'D');
const env = fc.array(fc.record({ name, value: fc.string({ maxLength: 3 }) }), { maxLength: 6 });

describe('mergeEnv (generated)', () => {
  it('keeps every name once per input name, takes the override’s value, and keeps the base order first', () => {
    fc.assert(
      fc.property(env, env, (base, over) => {
        const uniqueBase = base.filter((e, i) => base.findIndex((o) => o.name === e.name) === i);
        const uniqueOver = over.filter((e, i) => over.findIndex((o) => o.name === e.name) === i);
        const merged = mergeEnv(uniqueBase, uniqueOver);
        expect(new Set(merged.map((e) => e.name)).size).toBe(merged.length);
        for (const entry of uniqueOver) expect(merged.find((e) => e.name === entry.name)).toEqual(entry);
        for (const entry of uniqueBase) {
          if (!uniqueOver.some((o) => o.name === entry.name)) expect(merged).toContainEqual(entry);
        }
        expect(merged.slice(0, uniqueBase.length).map((e) => e.name)).toEqual(uniqueBase.map((e) => e.name));
      }),
    );
  });
});

describe('matchesSelector (generated)', () => {
  it('matchLabels holds exactly when every pair is in the labels', () => {
    const labels = fc.dictionary(name, fc.constantFrom('x', 'y'), { maxKeys: 4 });
    fc.assert(
      fc.property(labels, labels, (want, have) => {
        const isSubset = Object.entries(want).every(([k, v]) => have[k] === v);
        expect(matchesSelector({ matchLabels: want }, have)).toBe(isSubset);
      }),
    );
  });
});
