/** A SiteGrid for the unit tests of src/sites: a Deployment of two containers and a Service on port 80. */
import type { SiteGrid } from '../../src/sites/site-grid.js';

type Spec = SiteGrid['spec'];

/** The grid `shops/menu` (uid `uid-1`, generation 3), its spec's fields replaced by `spec`'s. */
export function grid(spec: Partial<Spec> = {}): SiteGrid {
  return {
    apiVersion: 'edgeadm.io/v1alpha1',
    kind: 'SiteGrid',
    metadata: { name: 'menu', namespace: 'shops', uid: 'uid-1', generation: 3 },
    spec: {
      workload: {
        kind: 'Deployment',
        replicas: 1,
        template: {
          metadata: { labels: { app: 'menu' } },
          spec: {
            containers: [
              {
                name: 'web',
                image: 'menu:1',
                env: [
                  { name: 'CITY', value: 'none' },
                  { name: 'MODE', value: 'a' },
                ],
              },
              { name: 'sidecar', image: 'log:1' },
            ],
          },
        },
      },
      service: { ports: [{ port: 80, targetPort: 8080 }] },
      ...spec,
    },
  };
}
