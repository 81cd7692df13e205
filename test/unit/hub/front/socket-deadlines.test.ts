/**
 * The handshake gate against a model: for generated sequences of
 * connections, finished handshakes, resets and passing time, the places it
 * counts are exactly the connections still in their handshake and its queue
 * exactly those waiting, oldest first, whatever path each one took; a
 * waiting connection's handshake starts once, when a place frees, unless it
 * waited too long by then (closed instead, as when a full gate is asked
 * again); a connection past its deadline (from its accept, waiting or not) is closed
 * and counted once; a full gate with a full queue refuses; a late close
 * never frees another connection's place. Sockets are stand-ins (events
 * only), the clock is vitest's.
 */
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  HandshakeGate,
  httpServerDeadlineOptions,
  DEFAULT_HUB_DEADLINES,
} from '../../../../src/hub/front/socket-deadlines.js';
import { TUNNEL_PING_INTERVAL_MS } from '../../../../src/tunnel/limits.js';

const DEADLINE_MS = 1000;

/** A TCP connection as the gate sees it: a peer address, 'close' once, destroy(). */
class FakeConnection extends EventEmitter {
  readonly remoteAddress = '127.0.0.1';
  isDestroyed = false;
  isClosed = false;
  destroyedBy: 'gate' | 'peer' | undefined;
  constructor(readonly remotePort: number) {
    super();
  }
  destroy(): this {
    this.isDestroyed = true;
    this.destroyedBy ??= 'gate';
    this.close();
    return this;
  }
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.emit('close');
  }
}

type Step =
  | { kind: 'connect'; port: number }
  | { kind: 'secure'; pick: number }
  | { kind: 'reset'; pick: number }
  | { kind: 'wait'; ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  // Few ports, so that a port comes back once its earlier connection is gone.
  fc.record({ kind: fc.constant('connect' as const), port: fc.integer({ min: 1, max: 6 }) }),
  fc.record({ kind: fc.constant('secure' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('reset' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 700 }) }),
);

describe('HandshakeGate', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('counts exactly the connections in their handshake and those waiting, starts each once in order, closes each at its deadline once, refuses past both', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 1, max: DEADLINE_MS + 200 }),
        fc.array(step, { maxLength: 60 }),
        (bound, queue, maxWaitMs, steps) => {
          let refused = 0;
          let expired = 0;
          const gate = new HandshakeGate({
            maxPending: bound,
            maxQueued: queue,
            maxWaitMs,
            handshakeMs: DEADLINE_MS,
            onRefused: () => (refused += 1),
            onExpired: () => (expired += 1),
          });
          // The model: each admitted connection's deadline; in a place, or waiting in order; started ones.
          let now = 0;
          const deadlineOf = new Map<FakeConnection, number>();
          const inHandshake = new Set<FakeConnection>();
          const waiting: FakeConnection[] = [];
          const open: FakeConnection[] = [];
          const starts = new Map<FakeConnection, number>();
          const startsExpected = new Map<FakeConnection, number>();
          let expectedRefused = 0;
          let expectedExpired = 0;
          const take = (connection: FakeConnection): void => {
            inHandshake.add(connection);
            startsExpected.set(connection, 1);
          };
          const since = new Map<FakeConnection, number>();
          // The model decides before the gate acts: what it says the gate closes is checked after each step.
          const closedByGate: FakeConnection[] = [];
          // Those that waited maxWaitMs or more are closed (refused), oldest first.
          const closeStale = (at: number): void => {
            while (waiting.length > 0 && at - (since.get(waiting[0] as FakeConnection) as number) >= maxWaitMs) {
              const stale = waiting.shift() as FakeConnection;
              deadlineOf.delete(stale);
              open.splice(open.indexOf(stale), 1);
              expectedRefused += 1;
              closedByGate.push(stale);
            }
          };
          const promote = (at: number): void => {
            closeStale(at);
            while (inHandshake.size < bound && waiting.length > 0) take(waiting.shift() as FakeConnection);
          };
          const leave = (connection: FakeConnection, at: number): void => {
            deadlineOf.delete(connection);
            if (inHandshake.delete(connection)) promote(at);
            else if (waiting.includes(connection)) waiting.splice(waiting.indexOf(connection), 1);
          };
          for (const s of steps) {
            if (s.kind === 'connect') {
              // Two live TCP connections never share a peer port.
              if (open.some((c) => c.remotePort === s.port)) continue;
              const connection = new FakeConnection(s.port);
              if (inHandshake.size >= bound) closeStale(now);
              const admission = gate.admit(connection as unknown as Socket, () =>
                starts.set(connection, (starts.get(connection) ?? 0) + 1),
              );
              const expected = inHandshake.size < bound ? 'handshake' : waiting.length < queue ? 'queued' : 'refused';
              expect(admission).toBe(expected);
              if (expected === 'refused') {
                expectedRefused += 1;
                expect(connection.isDestroyed).toBe(true);
              } else {
                deadlineOf.set(connection, now + DEADLINE_MS);
                since.set(connection, now);
                open.push(connection);
                if (expected === 'handshake') take(connection);
                else waiting.push(connection);
              }
            } else if (s.kind === 'secure' || s.kind === 'reset') {
              const connection = open[s.pick % Math.max(open.length, 1)];
              if (connection === undefined) continue;
              if (s.kind === 'secure') {
                if (!inHandshake.has(connection)) continue;
                gate.secured(connection as unknown as TLSSocket);
                leave(connection, now);
              } else {
                connection.destroyedBy ??= 'peer';
                connection.close();
                leave(connection, now);
                open.splice(open.indexOf(connection), 1);
              }
            } else {
              now += s.ms;
              // Deadlines fall in accept order; one that frees a place lets the oldest waiting one in first
              // (those that waited too long by then are closed instead).
              for (;;) {
                const next = [...deadlineOf].filter(([, deadline]) => deadline <= now).sort((a, b) => a[1] - b[1])[0];
                if (next === undefined) break;
                const [connection, deadline] = next;
                leave(connection, deadline);
                open.splice(open.indexOf(connection), 1);
                expectedExpired += 1;
              }
              vi.advanceTimersByTime(s.ms);
            }
            for (const stale of closedByGate.splice(0)) expect(stale.destroyedBy).toBe('gate');
            expect(gate.pendingCount).toBe(inHandshake.size);
            expect(gate.queuedCount).toBe(waiting.length);
            expect(starts).toEqual(startsExpected);
          }
          expect(refused).toBe(expectedRefused);
          expect(expired).toBe(expectedExpired);
          // Nothing the gate let through the handshake, kept waiting, or lost to a reset, was closed by it.
          for (const connection of open) expect(connection.isDestroyed).toBe(false);
          vi.clearAllTimers();
        },
      ),
      { numRuns: 500 },
    );
  });

  it('does not let a late close of a finished connection free the place of a new one on the same port', () => {
    const gate = new HandshakeGate({ maxPending: 1, handshakeMs: DEADLINE_MS });
    const first = new FakeConnection(7);
    expect(gate.admit(first as unknown as Socket, () => undefined)).toBe('handshake');
    gate.secured(first as unknown as TLSSocket);
    const second = new FakeConnection(7);
    expect(gate.admit(second as unknown as Socket, () => undefined)).toBe('handshake');
    first.close();
    expect(gate.pendingCount).toBe(1);
    expect(gate.admit(new FakeConnection(8) as unknown as Socket, () => undefined)).toBe('refused');
  });
});

describe('httpServerDeadlineOptions', () => {
  it("hands Node's HTTP server every HTTP deadline, the head no longer than the whole request", () => {
    expect(httpServerDeadlineOptions(DEFAULT_HUB_DEADLINES)).toMatchObject({
      headersTimeout: DEFAULT_HUB_DEADLINES.requestHeadMs,
      requestTimeout: DEFAULT_HUB_DEADLINES.requestMs,
      keepAliveTimeout: DEFAULT_HUB_DEADLINES.keepAliveMs,
      connectionsCheckingInterval: DEFAULT_HUB_DEADLINES.requestCheckIntervalMs,
    });
    const inverted = { ...DEFAULT_HUB_DEADLINES, requestHeadMs: 5000, requestMs: 2000 };
    expect(httpServerDeadlineOptions(inverted).headersTimeout).toBe(2000);
  });
});

describe("the hub's judgement of silent agents", () => {
  it('names an agent gone silent within two heartbeats, and never closes one whose pings arrive', () => {
    const { tunnelSilenceMs: limit, tunnelSweepMs: sweep } = DEFAULT_HUB_DEADLINES;
    // What the hub last heard is the sweep that noticed it (up to one sweep after the frame); it is
    // judged silent at the first sweep more than `limit` later.
    const worstDetection = sweep + (Math.floor(limit / sweep) + 1) * sweep;
    expect(worstDetection).toBeLessThanOrEqual(2 * TUNNEL_PING_INTERVAL_MS);
    // Pings on time are noticed at most an interval apart: never past the limit, with half a sweep to spare.
    expect(limit - TUNNEL_PING_INTERVAL_MS).toBeGreaterThanOrEqual(sweep / 2);
  });
});
