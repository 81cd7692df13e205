import { parseRollout, type RolloutSpec } from '../../../src/rollout/spec.js';

/** A Rollout document of a Deployment and a ConfigMap, customized per cluster. */
export function rolloutDocument(spec: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'edgeadm.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name: 'web' },
    spec: {
      resources: [
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'web', namespace: 'shop' },
          spec: {
            replicas: 1,
            template: { spec: { containers: [{ name: 'web', image: 'registry.local/web:${property:tag|1.0}' }] } },
          },
        },
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'site', namespace: 'shop' },
          data: { site: '${cluster.name}', region: '${label:region}' },
        },
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
      ],
      placement: { clusterSelector: 'env=prod' },
      ...spec,
    },
  };
}

export function rollout(spec: Record<string, unknown> = {}): RolloutSpec {
  return parseRollout(rolloutDocument(spec));
}
