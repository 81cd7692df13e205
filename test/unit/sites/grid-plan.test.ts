import { describe, expect, it } from 'vitest';
import { planGrid, type ObservedSite, type OwnedObject } from '../../../src/sites/grid-plan.js';
import { grid } from '../../support/site-grid-fixture.js';

const site = (name: string, readyNodes: number, nodes = 2): ObservedSite => ({
  name,
  labels: { 'edgeadm.io/site': name },
  nodes,
  readyNodes,
});
const deployment = (name: string, siteName: string, status: OwnedObject['status'] = {}): OwnedObject => ({
  kind: 'Deployment',
  name,
  site: siteName,
  ownerUid: 'uid-1',
  status,
  generation: 1,
});
const names = (objects: Array<{ kind?: string; metadata?: { name?: string } }>): string[] =>
  objects.map((o) => `${o.kind}/${o.metadata?.name}`);

describe('planGrid', () => {
  it('applies a workload and a Service per site and the grid Service, and reports each site', () => {
    const plan = planGrid(
      grid(),
      [site('lyon', 2), site('nice', 1)],
      [deployment('menu-lyon', 'lyon', { readyReplicas: 1, observedGeneration: 1 })],
    );
    expect(names(plan.apply)).toEqual([
      'Deployment/menu-lyon',
      'Service/menu-lyon',
      'Deployment/menu-nice',
      'Service/menu-nice',
      'Service/menu',
    ]);
    expect(plan.delete).toEqual([]);
    expect(plan.status).toEqual({
      observedGeneration: 3,
      sites: [
        { site: 'lyon', state: 'Ready', nodes: 2, readyNodes: 2, replicas: 1, readyReplicas: 1, observedGeneration: 1 },
        { site: 'nice', state: 'Progressing', nodes: 2, readyNodes: 1, replicas: 1, readyReplicas: 0 },
      ],
    });
  });

  it("leaves a cut-off site's copy alone (no apply, no delete) while its nodes exist", () => {
    const plan = planGrid(
      grid(),
      [site('lyon', 0)],
      [
        deployment('menu-lyon', 'lyon', { readyReplicas: 1, observedGeneration: 1 }),
        { ...deployment('menu-lyon', 'lyon'), kind: 'Service' },
      ],
    );
    expect(names(plan.apply)).toEqual(['Service/menu']);
    expect(plan.held).toEqual(['menu-lyon']);
    expect(plan.delete).toEqual([]);
    expect(plan.status.sites[0]!.state).toBe('Offline');
  });

  it('creates the copy of a site that is offline but has none yet (it runs once the site is back)', () => {
    expect(names(planGrid(grid(), [site('lyon', 0)], []).apply)).toContain('Deployment/menu-lyon');
  });

  it('deletes the copy of a site with no node left, and of a site no longer selected, never another owner’s', () => {
    const plan = planGrid(
      grid({ sites: { names: ['lyon'] } }),
      [site('lyon', 2), site('nice', 2)],
      [
        deployment('menu-lyon', 'lyon'),
        deployment('menu-nice', 'nice'),
        { ...deployment('menu-gone', 'gone'), kind: 'Service' },
        deployment('menu-gone', 'gone'),
      ],
    );
    expect(plan.delete).toEqual([
      { kind: 'Deployment', name: 'menu-nice' },
      { kind: 'Service', name: 'menu-gone' },
      { kind: 'Deployment', name: 'menu-gone' },
    ]);
  });

  it('deletes the old kind when the grid switches from Deployment to StatefulSet', () => {
    const template = grid().spec.workload.template;
    const plan = planGrid(
      grid({ workload: { kind: 'StatefulSet', template } }),
      [site('lyon', 1)],
      [deployment('menu-lyon', 'lyon')],
    );
    expect(plan.delete).toEqual([{ kind: 'Deployment', name: 'menu-lyon' }]);
    expect(names(plan.apply)).toContain('StatefulSet/menu-lyon');
  });

  it('marks a site whose copy name cannot be a Service name Invalid, and applies nothing for it', () => {
    const plan = planGrid(grid(), [site('x'.repeat(60), 1)], []);
    expect(plan.status.sites[0]!.state).toBe('Invalid');
    expect(names(plan.apply)).toEqual(['Service/menu']);
  });

  it('is stable: the same inputs plan the same (a second pass changes nothing)', () => {
    const inputs = [grid(), [site('lyon', 2)], [deployment('menu-lyon', 'lyon')]] as const;
    expect(planGrid(...inputs)).toEqual(planGrid(...inputs));
  });
});
