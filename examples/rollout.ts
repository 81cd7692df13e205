/**
 * A scripted rollout with edgeadm's TypeScript API: put a ConfigMap and a
 * Deployment on every cluster a selector matches, each copy with its own
 * values, in waves; follow it until it ends; print the declared summaries.
 *
 *   EDGEADM_HUB_CONFIG=admin.yaml node examples/rollout.ts 'env=prod'
 *
 * It exits 0 when the rollout completes, 1 when it halts or is aborted.
 */
import { connectHub, isEdgeadmError, type RolloutStatusView } from 'edgeadm';

const selector = process.argv[2] ?? 'env=prod';

const rollout = {
  apiVersion: 'edgeadm.io/v1alpha1',
  kind: 'Rollout',
  metadata: { name: 'example-web' },
  spec: {
    placement: { clusterSelector: selector },
    resources: [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'site', namespace: 'default' },
        // Filled in per cluster from its name and labels.
        data: { site: '${cluster.name}', region: '${label:region|unknown}' },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: 'default' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            // A property the operator sets per cluster (hub clusters set-properties), with a fallback.
            spec: { containers: [{ name: 'web', image: 'registry.example.com/web:${property:tag|1.0.0}' }] },
          },
        },
      },
    ],
    // A canary, then the rest; no soak, so the example ends quickly (real rollouts soak a while).
    strategy: { waves: [1, '100%'], soakSeconds: 0, deadlineSeconds: 300 },
    status: {
      summaries: [{ name: 'min-available', reduce: 'min', field: '.status.availableReplicas', kind: 'Deployment' }],
    },
  },
};

try {
  // The hub config as the CLI finds it: $EDGEADM_HUB_CONFIG, then ~/.edgeadm/hub.yaml.
  const hub = connectHub();
  const applied = await hub.rollouts.apply(rollout);
  console.log(`rollout ${applied.name}: revision ${applied.revision}${applied.isUnchanged ? ' (unchanged)' : ''}`);
  let last: RolloutStatusView | undefined;
  for await (const status of hub.rollouts.watch(applied.name)) {
    last = status;
    const { ready, failed } = status.counts;
    console.log(
      `${status.state}: wave ${status.currentWave + 1}/${status.waves.length}, ${ready} ready, ${failed} failed`,
    );
  }
  for (const summary of last?.summaries ?? []) {
    console.log(`summary ${summary.name} = ${summary.value ?? '-'} (${summary.reporting} reporting)`);
  }
  process.exitCode = last?.state === 'complete' ? 0 : 1;
} catch (error) {
  // Errors carry a stable code (E_ROLLOUT_INVALID, E_HUB_UNREACHABLE, …) and hints.
  console.error(isEdgeadmError(error) ? `${error.code}: ${error.message}` : error);
  process.exitCode = 1;
}
