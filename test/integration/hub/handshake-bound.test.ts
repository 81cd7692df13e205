/**
 * The hub's bound on TLS handshakes in progress and its queue: a connection
 * past the bound waits, its TLS not started, and gets the first place that
 * frees; a connection past the queue is closed before TLS and counted in
 * /metrics; once the pending ones go away, a new TLS connection is admitted
 * again.
 */
import { mkdtempSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type RunningHub } from '../../../src/hub/server/hub-server.js';
import { silentLogger } from '../../../src/log/run-log.js';

function rawConnect(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = netConnect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Resolves once the hub has closed `socket` (bounded by a safety net far above any deadline at play). */
function closure(socket: Socket): Promise<'closed' | 'open'> {
  return new Promise((resolve) => {
    if (socket.destroyed || socket.readableEnded) return resolve('closed');
    const timer = setTimeout(() => resolve('open'), 30_000);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve('closed');
    });
    socket.on('error', () => undefined);
    socket.resume();
  });
}

/** A TLS client: `connected` once its TCP connect is done, `secured` whether its handshake finished. */
function tlsClient(port: number): { connected: Promise<void>; secured: Promise<boolean>; isSecure: () => boolean } {
  let isSecure = false;
  let onConnect: () => void = () => undefined;
  const connected = new Promise<void>((resolve) => (onConnect = resolve));
  const secured = new Promise<boolean>((resolve) => {
    const socket = tlsConnect(
      { port, host: '127.0.0.1', rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] },
      () => {
        isSecure = true;
        socket.destroy();
        resolve(true);
      },
    );
    socket.once('connect', onConnect);
    socket.once('error', () => {
      onConnect();
      resolve(false);
    });
  });
  return { connected, secured, isSecure: () => isSecure };
}

function tlsHandshake(port: number): Promise<boolean> {
  return tlsClient(port).secured;
}

describe('hub handshake bound', () => {
  let hub: RunningHub;
  beforeAll(async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'hub-bound-')), 'hub');
    // A handshake deadline far longer than the test: the places are held until the test lets go.
    hub = await startHub({
      listen: '127.0.0.1:0',
      dataDir,
      logger: silentLogger,
      maxPendingHandshakes: 2,
      maxQueuedHandshakes: 1,
      deadlines: { handshakeMs: 600_000 },
    });
  });
  afterAll(async () => {
    await hub.close();
  });

  it('queues the connection past the bound, closes the one past the queue, and starts the queued one first', async () => {
    // The hub accepts connections in the order they were made: the first two take the places.
    const first = await rawConnect(hub.port);
    const second = await rawConnect(hub.port);
    // The third waits for a place: its handshake does not start.
    const third = tlsClient(hub.port);
    await third.connected;
    // The fourth finds the queue full: closed before TLS.
    const fourth = await rawConnect(hub.port);
    expect(await closure(fourth)).toBe('closed');
    expect(await tlsHandshake(hub.port)).toBe(false);
    expect([first.destroyed, second.destroyed, third.isSecure()]).toEqual([false, false, false]);
    // A place frees: the waiting one gets it and its handshake finishes.
    first.destroy();
    expect(await third.secured).toBe(true);
    second.destroy();
    // The hub frees the places when it sees the closes, which it learns after the client: try until it has.
    let isAdmitted = false;
    for (let attempt = 0; attempt < 50 && !isAdmitted; attempt += 1) isAdmitted = await tlsHandshake(hub.port);
    expect(isAdmitted).toBe(true);
  }, 60_000);
});
