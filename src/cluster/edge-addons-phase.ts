/**
 * init's edge-addons phase (with --enable-edge): renders the edge addon
 * manifests (manifests/) and server-side applies them: the edge settings
 * that joining edge nodes read (label, taint, edge-proxy cache bounds) and
 * the RBAC that lets them read those settings with their bootstrap token.
 * The edge-proxy itself is installed on each node by `join --enable-edge`.
 */
import type { AutonomyDuration } from '../edge/autonomy.js';
import type { KubeClient } from '../kube/client.js';
import type { Phase } from '../workflow/phase.js';
import { defaultEdgeSettings, edgeAddonObjects } from './edge-settings.js';
import { applyObjects, describeObject } from './manifests.js';
import type { NodeData } from './node-context.js';

/** What the phase needs of the init workflow. */
export interface EdgeAddonsData extends NodeData {
  enableEdge: boolean;
  /** init's --autonomy-duration: the cluster's default for edge nodes. */
  autonomyDuration?: AutonomyDuration;
}

/** Makes the edge-addons phase; `adminClient` is init's client for the new control plane. */
export function edgeAddonsPhase<C extends EdgeAddonsData>(deps: {
  adminClient: (ctx: C) => Promise<KubeClient>;
}): Phase<C> {
  return {
    name: 'edge-addons',
    summary: 'With --enable-edge: apply the edge addon manifests (edge node settings, and the RBAC joining nodes need)',
    runIf: (ctx) => ctx.enableEdge,
    async run(ctx) {
      const objects = edgeAddonObjects(defaultEdgeSettings(ctx.autonomyDuration));
      if (ctx.isDryRun) {
        for (const object of objects) ctx.say(`Would server-side apply ${describeObject(object)}`);
        return 'unchanged';
      }
      const changed = await applyObjects(await deps.adminClient(ctx), objects);
      for (const object of objects) {
        ctx.say(`${changed.includes(object) ? 'applied' : 'already applied'} ${describeObject(object)}`);
      }
      return changed.length > 0 ? 'changed' : 'unchanged';
    },
  };
}
