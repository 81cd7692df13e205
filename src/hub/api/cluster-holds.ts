/**
 * Holding and releasing a cluster, one way for the operator API (`PUT|DELETE
 * /hub/v1/clusters/NAME/hold`) and the web view's buttons: the cluster must
 * be one the user reaches, only a hub admin may change a hold (a hold keeps
 * every owner's rollouts off the cluster), and the rollout controller is told
 * at once.
 */
import { matchesSelector, parseLabelSelector } from '../../kube/label-selector.js';
import { isClusterName } from '../../kube/names.js';
import { HttpError } from '../http/http-replies.js';
import { MAX_HOLD_REASON_LENGTH } from '../limits.js';
import { refuseClusterFactChange } from '../rollouts/rollout-permissions.js';
import type { ClusterRecord, UserRecord } from '../store/store.js';
import type { HubContext } from './hub-context.js';

/** The cluster a hold or properties request names, if the user may reach it. */
export async function reachableCluster(context: HubContext, user: UserRecord, name: string): Promise<ClusterRecord> {
  const cluster = isClusterName(name) ? await context.store.getCluster(name) : undefined;
  if (
    cluster !== undefined &&
    (user.isAdmin || matchesSelector(parseLabelSelector(user.clustersSelector), cluster.labels))
  ) {
    return cluster;
  }
  if (user.isAdmin) throw new HttpError(404, 'E_HUB_CLUSTER_NOT_FOUND', `no cluster named "${name}"`);
  // As the kube proxy: a scoped user is not told whether a cluster outside their reach exists.
  throw new HttpError(403, 'E_HUB_FORBIDDEN', `user "${user.name}" cannot reach cluster "${name}" through the hub`);
}

/** A hold's reason as a request gives it: a non-empty string of bounded length. */
export function holdReasonOf(reason: unknown): string {
  if (typeof reason !== 'string' || reason.trim() === '' || reason.length > MAX_HOLD_REASON_LENGTH) {
    throw new HttpError(
      400,
      'E_HUB_BAD_REQUEST',
      `reason must be a non-empty string of at most ${MAX_HOLD_REASON_LENGTH} characters`,
    );
  }
  return reason;
}

/**
 * Holds the cluster with `reason`, or releases it (`reason` undefined), as
 * `user`; returns the cluster as stored now.
 *
 * @throws {HttpError} 403 for a user who is no hub admin or cannot reach the cluster, 404 for none.
 */
export async function changeClusterHold(
  context: HubContext,
  user: UserRecord,
  name: string,
  reason: string | undefined,
): Promise<ClusterRecord> {
  const cluster = await reachableCluster(context, user, name);
  const actor = {
    user: user.name,
    groups: [...user.groups],
    clustersSelector: user.clustersSelector,
    isAdmin: user.isAdmin,
  };
  const refusal = refuseClusterFactChange(actor, 'hold');
  if (refusal !== undefined) throw new HttpError(403, 'E_HUB_FORBIDDEN', refusal);
  if (reason === undefined) {
    await context.store.setClusterHold(cluster.name, undefined);
    context.logger.info(`cluster ${cluster.name}: hold released by ${user.name}`);
  } else {
    await context.store.setClusterHold(cluster.name, { reason, since: context.now().toISOString(), by: user.name });
    context.logger.info(`cluster ${cluster.name}: held by ${user.name} (${reason})`);
  }
  context.rollouts?.clustersChanged();
  const updated = await context.store.getCluster(cluster.name);
  if (updated === undefined) throw new HttpError(404, 'E_HUB_CLUSTER_NOT_FOUND', `no cluster named "${name}"`);
  return updated;
}
