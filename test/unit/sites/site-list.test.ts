import { describe, expect, it } from 'vitest';
import { summarizeSites, type SiteNodeObject } from '../../../src/sites/site-list.js';

const node = (name: string, site: string | undefined, ready: 'True' | 'False' | 'Unknown'): SiteNodeObject => ({
  metadata: { name, labels: site === undefined ? {} : { 'edgeadm.io/site': site } },
  status: { conditions: [{ type: 'Ready', status: ready }] },
});

describe('summarizeSites', () => {
  it('groups nodes by their site label, with each node readiness, and names the nodes without a site', () => {
    const listing = summarizeSites([
      node('b-2', 'shop-b', 'Unknown'),
      node('cp', undefined, 'True'),
      node('a-1', 'shop-a', 'True'),
      node('b-1', 'shop-b', 'True'),
      node('a-2', 'shop-a', 'False'),
    ]);
    expect(listing).toEqual({
      sites: [
        {
          name: 'shop-a',
          readyNodes: 1,
          nodes: [
            { name: 'a-1', isReady: true },
            { name: 'a-2', isReady: false },
          ],
        },
        {
          name: 'shop-b',
          readyNodes: 1,
          nodes: [
            { name: 'b-1', isReady: true },
            { name: 'b-2', isReady: false },
          ],
        },
      ],
      nodesWithoutSite: ['cp'],
    });
  });
});
