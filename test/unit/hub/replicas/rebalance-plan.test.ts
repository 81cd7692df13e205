/** How the replicas share the moves of a round (src/hub/replicas/rebalance-plan.ts): pure, over generated fleets. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rebalanceMoves, type RebalancePolicy, type ReplicaLoad } from '../../../../src/hub/replicas/rebalance-plan.js';

const policy: RebalancePolicy = { margin: 0.1, slack: 16, maxMovesPerRound: 250 };

/** Every replica's part of one round, applied at once (each sees the same counts). */
function round(loads: ReplicaLoad[], rules = policy): { next: ReplicaLoad[]; moved: number } {
  const delta = new Map(loads.map((load) => [load.id, 0]));
  let moved = 0;
  for (const self of loads) {
    for (const move of rebalanceMoves(self.id, loads, rules)) {
      delta.set(self.id, delta.get(self.id)! - move.count);
      delta.set(move.to, delta.get(move.to)! + move.count);
      moved += move.count;
    }
  }
  return { next: loads.map((load) => ({ id: load.id, tunnels: load.tunnels + delta.get(load.id)! })), moved };
}

const fleets = fc
  .array(fc.nat(12_000), { minLength: 1, maxLength: 5 })
  .map((counts) => counts.map((tunnels, i) => ({ id: `replica-${i}`, tunnels })));

describe('the rebalancing plan', () => {
  it('leaves a fleet alone while no replica is past its share and the margin', () => {
    expect(
      round([
        { id: 'a', tunnels: 3_600 },
        { id: 'b', tunnels: 3_300 },
        { id: 'c', tunnels: 3_100 },
      ]).moved,
    ).toBe(0);
    expect(
      round([
        { id: 'a', tunnels: 20 },
        { id: 'b', tunnels: 0 },
      ]).moved,
    ).toBe(0);
    expect(rebalanceMoves('a', [{ id: 'a', tunnels: 10_000 }], policy)).toEqual([]);
  });

  it('never fills a replica past its share, keeps every tunnel, and paces each giver', () => {
    fc.assert(
      fc.property(fleets, (loads) => {
        const total = loads.reduce((sum, load) => sum + load.tunnels, 0);
        const share = Math.ceil(total / loads.length);
        const { next } = round(loads);
        expect(next.reduce((sum, load) => sum + load.tunnels, 0)).toBe(total);
        loads.forEach((load, i) => {
          const after = next[i]!.tunnels;
          // Takers end at most at the share; givers never below it, and lose at most one round's pace.
          if (after > load.tunnels) expect(after).toBeLessThanOrEqual(share);
          if (after < load.tunnels) {
            expect(after).toBeGreaterThanOrEqual(share);
            expect(load.tunnels - after).toBeLessThanOrEqual(policy.maxMovesPerRound);
          }
        });
      }),
    );
  });

  it('brings every replica under its share and the margin within a bounded number of rounds', () => {
    fc.assert(
      fc.property(fleets, (start) => {
        let loads = start;
        for (let rounds = 0; rounds < 60; rounds += 1) loads = round(loads).next;
        const total = loads.reduce((sum, load) => sum + load.tunnels, 0);
        const ceiling = Math.ceil(total / loads.length) * (1 + policy.margin) + policy.slack;
        for (const load of loads) expect(load.tunnels).toBeLessThanOrEqual(ceiling);
      }),
    );
  });

  it('spreads the agents of a replica that came back: 5,000 and 5,000 give to the empty one until under the margin', () => {
    const loads = [
      { id: 'a', tunnels: 5_000 },
      { id: 'b', tunnels: 5_000 },
      { id: 'c', tunnels: 0 },
    ];
    expect(rebalanceMoves('a', loads, policy)).toEqual([{ to: 'c', count: 250 }]);
    expect(rebalanceMoves('c', loads, policy)).toEqual([]);
    let next = loads;
    let rounds = 0;
    while (round(next).moved > 0) {
      next = round(next).next;
      rounds += 1;
    }
    // 6 rounds of 250 from each (30 s at the hub's interval); then 35 % each at most, none above 40 %.
    expect(next.map((load) => load.tunnels)).toEqual([3_500, 3_500, 3_000]);
    expect(rounds).toBe(6);
  });
});
