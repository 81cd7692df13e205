/**
 * The halted rollouts a user may see, read from the rollout controller for
 * the attention list: each with the clusters it places and their phase.
 * Only halted rollouts' rows are read, and those views are the controller's
 * cached ones while the rollout does not change; a hub replica that does not
 * lead runs no controller and knows nothing of rollouts (undefined).
 */
import type { RolloutController } from '../rollouts/rollout-controller.js';
import type { RolloutActor } from '../rollouts/rollout-permissions.js';
import type { HaltedRollout } from './attention.js';

/** What is read of the controller. */
export type RolloutReader = Pick<RolloutController, 'list' | 'status'>;

/** The halted rollouts `actor` may see, or undefined without a controller. */
export function haltedRollouts(
  controller: RolloutReader | undefined,
  actor: RolloutActor,
): HaltedRollout[] | undefined {
  if (controller === undefined) return undefined;
  const halted: HaltedRollout[] = [];
  for (const item of controller.list(actor)) {
    if (item.state !== 'halted') continue;
    const status = controller.status(item.name, actor, true);
    halted.push({
      name: item.name,
      haltReason: status.haltReason,
      since: status.updatedAt,
      clusters: new Map((status.clusters ?? []).map((row) => [row.cluster, row.phase])),
    });
  }
  return halted;
}
