/**
 * The web view's change watcher and event streams (src/hub/web/events.ts):
 * a tunnel opening or closing and a rollout's shown status changing are
 * each told once, runs only while someone listens, and a stream ends at its
 * deadline and when its session ends.
 */
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { HubContext } from '../../../../src/hub/api/hub-context.js';
import type { RolloutController } from '../../../../src/hub/rollouts/rollout-controller.js';
import { FleetWatcher, serveEventStream, type FleetChange } from '../../../../src/hub/web/events.js';
import type { HubTunnel } from '../../../../src/tunnel/hub-tunnel.js';

function fakeContext() {
  const tunnels = new Map<string, HubTunnel>();
  let rollouts: { name: string; revision: number; state: string; counts: object; updatedAt: string }[] = [];
  const context = {
    tunnels,
    rollouts: { list: () => rollouts } as unknown as RolloutController,
  } as unknown as HubContext;
  return {
    context,
    open: (name: string) => tunnels.set(name, { isOpen: true } as HubTunnel),
    close: (name: string) => tunnels.delete(name),
    setRollouts: (next: typeof rollouts) => (rollouts = next),
  };
}

class FakeResponse extends EventEmitter {
  written = '';
  writableEnded = false;
  writableLength = 0;
  status = 0;
  writeHead(status: number): this {
    this.status = status;
    return this;
  }
  write(text: string): boolean {
    this.written += text;
    return true;
  }
  end(): void {
    this.writableEnded = true;
  }
  destroy(): void {
    this.writableEnded = true;
  }
}

describe('FleetWatcher', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('tells each connection change and rollout change once, and stops polling without listeners', () => {
    const fake = fakeContext();
    fake.open('a');
    const watcher = new FleetWatcher(fake.context, 100);
    const seen: FleetChange[] = [];
    const stop = watcher.subscribe((change) => seen.push(change));
    vi.advanceTimersByTime(300);
    expect(seen).toEqual([]);
    fake.close('a');
    fake.open('b');
    vi.advanceTimersByTime(100);
    expect(seen).toEqual([
      {
        clusters: [
          { name: 'b', state: 'Connected' },
          { name: 'a', state: 'Disconnected' },
        ],
        rollouts: [],
      },
    ]);
    expect(watcher.lastOpenAt('a')).toBeDefined();
    fake.setRollouts([{ name: 'web', revision: 1, state: 'progressing', counts: { ready: 0 }, updatedAt: 't' }]);
    vi.advanceTimersByTime(100);
    fake.setRollouts([{ name: 'web', revision: 1, state: 'progressing', counts: { ready: 1 }, updatedAt: 't' }]);
    vi.advanceTimersByTime(100);
    fake.setRollouts([]);
    vi.advanceTimersByTime(100);
    expect(seen.slice(1).map((change) => change.rollouts)).toEqual([['web'], ['web'], ['web']]);
    stop();
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('serveEventStream', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('sends heartbeats, passes on only scoped changes, and ends at its deadline', async () => {
    const fake = fakeContext();
    const watcher = new FleetWatcher(fake.context, 100);
    const res = new FakeResponse();
    let closed = 0;
    serveEventStream({
      res: res as unknown as ServerResponse,
      watcher,
      headers: {},
      isSessionLive: () => true,
      scope: async (change) => ({ ...change, clusters: change.clusters.filter((c) => c.name !== 'secret') }),
      onClose: () => (closed += 1),
      heartbeatMs: 1000,
      deadlineMs: 5000,
    });
    expect(res.status).toBe(200);
    fake.open('secret');
    fake.open('mine');
    await vi.advanceTimersByTimeAsync(100);
    expect(res.written).toContain('event: clusters\ndata: {"changes":[{"name":"mine","state":"Connected"}]}');
    expect(res.written).not.toContain('secret');
    await vi.advanceTimersByTimeAsync(1000);
    expect(res.written).toContain(': heartbeat');
    await vi.advanceTimersByTimeAsync(5000);
    expect(res.writableEnded).toBe(true);
    expect(closed).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('ends the stream when its session has ended', async () => {
    const watcher = new FleetWatcher(fakeContext().context, 100);
    const res = new FakeResponse();
    let isLive = true;
    serveEventStream({
      res: res as unknown as ServerResponse,
      watcher,
      headers: {},
      isSessionLive: () => isLive,
      scope: async (change) => change,
      onClose: () => {},
      heartbeatMs: 1000,
      deadlineMs: 60_000,
    });
    isLive = false;
    await vi.advanceTimersByTimeAsync(1000);
    expect(res.written).toContain('event: signed-out');
    expect(res.writableEnded).toBe(true);
  });
});
