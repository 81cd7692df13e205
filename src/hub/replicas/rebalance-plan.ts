/**
 * How many tunnels each replica hands to which other replica, so that no
 * replica holds much more than its share: after a replica died, its agents
 * went to the others, and none comes back by itself when it returns. Every
 * replica computes the same plan from the tunnel counts it sees (the claims
 * all replicas follow, fleet-connections.ts) and carries out its own part,
 * so two crowded replicas never both fill the same emptier one past its
 * share. Pure: no I/O.
 */

/** A replica and the tunnels it holds. */
export interface ReplicaLoad {
  id: string;
  tunnels: number;
}

/** When a replica gives tunnels away, and how many at a time. */
export interface RebalancePolicy {
  /** A replica gives tunnels away only above its share × (1 + margin) + slack. */
  margin: number;
  /** Tunnels over the margin that are still left alone (small fleets are not shuffled). */
  slack: number;
  /** Most tunnels one replica moves in one round. */
  maxMovesPerRound: number;
}

/** One replica's part of a round: move `count` tunnels to `to`. */
export interface Move {
  to: string;
  count: number;
}

/**
 * The moves of `self` in this round. Replicas above their share plus the
 * margin give their excess (down to the share) to replicas below their
 * share, the most crowded first, the emptiest first, in an order every
 * replica computes alike (by count, then id).
 */
export function rebalanceMoves(self: string, loads: readonly ReplicaLoad[], policy: RebalancePolicy): Move[] {
  if (loads.length < 2) return [];
  const total = loads.reduce((sum, load) => sum + load.tunnels, 0);
  const share = Math.ceil(total / loads.length);
  const ceiling = share * (1 + policy.margin) + policy.slack;
  const order = (a: ReplicaLoad, b: ReplicaLoad): number =>
    a.tunnels - b.tunnels || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  const givers = loads
    .filter((load) => load.tunnels > ceiling)
    .sort((a, b) => order(b, a))
    .map((load) => ({ id: load.id, left: Math.min(load.tunnels - share, policy.maxMovesPerRound) }));
  const takers = loads
    .filter((load) => load.tunnels < share)
    .sort(order)
    .map((load) => ({ id: load.id, room: share - load.tunnels }));
  const moves: Move[] = [];
  for (const giver of givers) {
    for (const taker of takers) {
      const count = Math.min(giver.left, taker.room);
      if (count <= 0) continue;
      giver.left -= count;
      taker.room -= count;
      if (giver.id === self) moves.push({ to: taker.id, count });
    }
  }
  return moves;
}
