/**
 * One round of the rebalancer (src/hub/replicas/rebalancer.ts): this
 * replica's tunnels (stand-ins with the fields the rebalancer reads), the
 * others' claims through the real FleetConnections, replicas listed by a
 * coordination driven by the test.
 */
import { describe, expect, it } from 'vitest';
import { HubMetrics } from '../../../../src/hub/metrics/hub-metrics.js';
import { FleetConnections } from '../../../../src/hub/replicas/fleet-connections.js';
import { Rebalancer, DEFAULT_REBALANCE, tcpReachable } from '../../../../src/hub/replicas/rebalancer.js';
import type { ReplicaCoordination, ReplicaInfo } from '../../../../src/hub/store/coordination.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import type { HubTunnel } from '../../../../src/tunnel/hub-tunnel.js';

const replica = (id: string): ReplicaInfo => ({
  id,
  peerUrl: `https://${id}.test:9443`,
  advertiseUrl: `https://${id}.test:9443`,
  startedAt: '',
});

/** A tunnel as the rebalancer sees it, recording the moves asked of it. */
function tunnel(cluster: string, extra: { userStreams?: number; openedAt?: number } = {}) {
  const asked: string[] = [];
  const stand = {
    cluster,
    isOpen: true,
    isMoving: false,
    userStreams: extra.userStreams ?? 0,
    openedAt: extra.openedAt ?? 0,
    move: (to: string) => {
      asked.push(to);
      return Promise.resolve();
    },
  };
  return { stand: stand as unknown as HubTunnel, asked };
}

async function world(
  ownTunnels: ReturnType<typeof tunnel>[],
  others: Record<string, number>,
  reachable: (url: string) => boolean = () => true,
) {
  const now = 60_000;
  const claims = new Map<string, string>();
  for (const [id, count] of Object.entries(others)) {
    for (let i = 0; i < count; i += 1) claims.set(`${id}-cluster-${i}`, id);
  }
  const coordination = {
    self: replica('self'),
    listReplicas: () => Promise.resolve([replica('self'), ...Object.keys(others).map(replica)]),
    listClaims: () => Promise.resolve(claims),
    watchClaims: () => () => {},
  } as unknown as ReplicaCoordination;
  const fleet = new FleetConnections({ coordination, logger: silentLogger });
  await fleet.start();
  const metrics = new HubMetrics();
  const rebalancer = new Rebalancer({
    coordination,
    tunnels: new Map(ownTunnels.map((t) => [t.stand.cluster, t.stand])),
    fleet,
    metrics,
    logger: silentLogger,
    settings: { ...DEFAULT_REBALANCE, slack: 0, maxMovesPerRound: 100 },
    now: () => now,
    isReachable: (url) => Promise.resolve(reachable(url)),
  });
  return { rebalancer, metrics };
}

describe('the rebalancer', () => {
  it("asks this replica's idle tunnels to move to the replicas below their share, within the round's pace", async () => {
    const own = Array.from({ length: 300 }, (_, i) => tunnel(`own-${i}`));
    const { rebalancer, metrics } = await world(own, { b: 300, c: 0 });
    const round = await rebalancer.round();
    expect(round.loads).toEqual([
      { id: 'self', tunnels: 300 },
      { id: 'b', tunnels: 300 },
      { id: 'c', tunnels: 0 },
    ]);
    expect(Object.fromEntries(round.moved)).toEqual({ c: 100 });
    expect(own.filter((t) => t.asked.length > 0)).toHaveLength(100);
    expect(new Set(own.flatMap((t) => t.asked))).toEqual(new Set(['https://c.test:9443']));
    expect(await metrics.render()).toMatch(/^edgeadm_hub_tunnels_moved_total 100$/m);
  });

  it('never asks a tunnel with a user stream open (a kubectl watch, logs or exec), nor one that just arrived', async () => {
    const busy = Array.from({ length: 150 }, (_, i) => tunnel(`busy-${i}`, { userStreams: 1 }));
    const fresh = Array.from({ length: 100 }, (_, i) => tunnel(`fresh-${i}`, { openedAt: 50_000 }));
    const idle = Array.from({ length: 10 }, (_, i) => tunnel(`idle-${i}`));
    const { rebalancer } = await world([...busy, ...fresh, ...idle], { b: 0 });
    const round = await rebalancer.round();
    expect(Object.fromEntries(round.moved)).toEqual({ b: 10 });
    expect([...busy, ...fresh].every((t) => t.asked.length === 0)).toBe(true);
    expect(idle.every((t) => t.asked.length === 1)).toBe(true);
  });

  it('does nothing on a replica within its share', async () => {
    const own = Array.from({ length: 100 }, (_, i) => tunnel(`own-${i}`));
    const { rebalancer } = await world(own, { b: 300, c: 0 });
    expect((await rebalancer.round()).moved.size).toBe(0);
    expect(own.every((t) => t.asked.length === 0)).toBe(true);
  });

  it('sends no tunnel to a replica whose port does not answer (one that died, still listed until its lease runs out)', async () => {
    const own = Array.from({ length: 300 }, (_, i) => tunnel(`own-${i}`));
    const { rebalancer } = await world(own, { dead: 0 }, (url) => !url.includes('dead'));
    expect((await rebalancer.round()).moved.size).toBe(0);
    expect(own.every((t) => t.asked.length === 0)).toBe(true);
    // The same replica answering: it gets its tunnels.
    const { rebalancer: again } = await world(own, { dead: 0 });
    expect(Object.fromEntries((await again.round()).moved)).toEqual({ dead: 100 });
  });

  it('finds a live port reachable and a closed one not', async () => {
    const { createServer } = await import('node:net');
    const server = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as { port: number };
    expect(await tcpReachable(`https://127.0.0.1:${port}`)).toBe(true);
    await new Promise((resolve) => server.close(resolve));
    expect(await tcpReachable(`https://127.0.0.1:${port}`)).toBe(false);
  });
});
