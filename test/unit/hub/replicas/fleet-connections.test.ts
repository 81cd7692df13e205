import { describe, expect, it } from 'vitest';
import type { ReplicaCoordination, ReplicaInfo } from '../../../../src/hub/store/coordination.js';
import { FleetConnections } from '../../../../src/hub/replicas/fleet-connections.js';
import { silentLogger } from '../../../../src/log/run-log.js';

const SELF: ReplicaInfo = { id: 'self', peerUrl: '', advertiseUrl: '', startedAt: '' };

/** The claims part of a coordination, driven by the test: the list answers when the test says so. */
function claimsCoordination(listed: Map<string, string>) {
  let watcher: ((cluster: string, holder: string | undefined) => void) | undefined;
  const list = Promise.withResolvers<Map<string, string>>();
  const coordination = {
    self: SELF,
    listClaims: () => list.promise,
    watchClaims: (onChange: (cluster: string, holder: string | undefined) => void) => {
      watcher = onChange;
      return () => (watcher = undefined);
    },
  } as unknown as ReplicaCoordination;
  return {
    coordination,
    claim: (cluster: string, holder: string | undefined) => watcher?.(cluster, holder),
    answerList: () => list.resolve(listed),
  };
}

function started(listed: Map<string, string> = new Map()) {
  const driver = claimsCoordination(listed);
  const fleet = new FleetConnections({ coordination: driver.coordination, logger: silentLogger });
  const events: string[] = [];
  fleet.listen({
    connected: (cluster) => events.push(`+${cluster}`),
    disconnected: (cluster) => events.push(`-${cluster}`),
  });
  return { fleet, events, ...driver };
}

describe('FleetConnections', () => {
  it('counts the clusters other replicas claim as connected, and not this replica’s own stale claims', async () => {
    const { fleet, answerList } = started(
      new Map([
        ['a', 'r1'],
        ['b', 'r2'],
        ['c', 'self'],
      ]),
    );
    const starting = fleet.start();
    answerList();
    await starting;
    expect(fleet.connected().sort()).toEqual(['a', 'b']);
    expect(fleet.isConnected('c')).toBe(false);
    fleet.localOpened('c');
    expect(fleet.connected().sort()).toEqual(['a', 'b', 'c']);
  });

  it('keeps what the watch said during the list over the list, which may be older', async () => {
    const { fleet, claim, answerList } = started(new Map([['a', 'r1']]));
    const starting = fleet.start();
    claim('a', undefined);
    claim('b', 'r2');
    answerList();
    await starting;
    expect(fleet.connected()).toEqual(['b']);
  });

  it('tells a new tunnel anywhere as a connection: moved, or reconnected to the same replica', async () => {
    const { fleet, events, claim, answerList } = started();
    const starting = fleet.start();
    answerList();
    await starting;
    fleet.localOpened('a');
    // The agent reached r1 while this replica's old tunnel is not closed yet: still held here.
    claim('a', 'r1');
    expect(events).toEqual(['+a']);
    fleet.localClosed('a');
    expect(events).toEqual(['+a', '+a']);
    // Reconnected to the same replica: a put of the same holder is a new tunnel.
    claim('a', 'r1');
    expect(events).toEqual(['+a', '+a', '+a']);
    claim('a', undefined);
    expect(events).toEqual(['+a', '+a', '+a', '-a']);
    expect(fleet.isConnected('a')).toBe(false);
  });

  it('tells a disconnection only when no replica holds the cluster any more', async () => {
    const { fleet, events, claim, answerList } = started();
    const starting = fleet.start();
    answerList();
    await starting;
    claim('a', 'r1');
    fleet.localOpened('a');
    fleet.localClosed('a');
    expect(events).toEqual(['+a', '+a', '+a']);
    expect(fleet.isConnected('a')).toBe(true);
    // This replica's own claim, put after its tunnel opened, changes nothing.
    claim('b', 'self');
    expect(events).toHaveLength(3);
    claim('a', undefined);
    expect(events.at(-1)).toBe('-a');
  });
});
