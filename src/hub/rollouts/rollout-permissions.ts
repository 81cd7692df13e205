/**
 * Who may do what to a rollout and to the cluster facts rollouts read, and
 * as whom each resulting write on a cluster runs: the hub's rollout identity
 * model (SECURITY.md, "Rollouts act as the user who caused the write").
 *
 * - Seeing a rollout (status, document, list): an admin, or a user whose
 *   clusters selector covers its placement (placementOutsideScope).
 * - Changing a rollout (a new revision, which takes it over; undo, pause,
 *   resume, abort, delete): its owner (the user who last applied or undid
 *   it) or an admin. Seeing is not enough: a user could otherwise delete,
 *   or take over and rewrite, an admin's rollout in their scope.
 * - A copy is applied as the rollout's owner, impersonated; a removal as
 *   the user whose action removed it (the deleter, or the applier whose
 *   revision left the cluster), so a user can never remove with anyone
 *   else's rights.
 * - Cluster holds and properties are set by admins only: a property changes
 *   what every rollout that reads `${property:…}` writes, as its owner, and
 *   a hold keeps every rollout off a cluster, so neither can be the choice
 *   of a user who is not trusted with every owner's rights.
 *
 * Pure: no I/O.
 */
import type { RolloutOwner } from '../../rollout/wire.js';
import type { RolloutOwnerRecord, UserRecord } from '../store/store.js';

/** Who asks, as far as permissions go. */
export interface RolloutPrincipal {
  user: string;
  groups: readonly string[];
  isAdmin: boolean;
}

/** Who asks: the user whose token the operator API checked, with the clusters selector that scopes them. */
export interface RolloutActor extends RolloutOwnerRecord {
  isAdmin: boolean;
}

/** The actor a hub user's request acts as. */
export function rolloutActorOf(user: UserRecord): RolloutActor {
  return { user: user.name, groups: [...user.groups], clustersSelector: user.clustersSelector, isAdmin: user.isAdmin };
}

/** Why a change of a rollout is refused, or undefined when `actor` may make it. */
export function refuseRolloutChange(
  actor: RolloutPrincipal,
  rollout: { name: string; owner: string },
  action: string,
): string | undefined {
  if (actor.isAdmin || actor.user === rollout.owner) return undefined;
  return (
    `user "${actor.user}" cannot ${action} rollout "${rollout.name}": it is owned by "${rollout.owner}", ` +
    'and only its owner or a hub admin may change it (ask them, or choose another name)'
  );
}

/** Why setting a cluster's hold or properties is refused, or undefined when `actor` may. */
export function refuseClusterFactChange(actor: RolloutPrincipal, fact: 'hold' | 'properties'): string | undefined {
  if (actor.isAdmin) return undefined;
  const what =
    fact === 'hold'
      ? "hold or release a cluster (a hold keeps every owner's rollouts off it)"
      : "set a cluster's properties (rollouts of other owners read them)";
  return `user "${actor.user}" cannot ${what}: only a hub admin may`;
}

/** The identity a removal runs as on the cluster: the user whose action removed it. */
export function removalIdentity(actor: RolloutPrincipal): RolloutOwner {
  return { user: actor.user, groups: [...actor.groups] };
}
