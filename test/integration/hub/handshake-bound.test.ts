/**
 * The hub's bound on TLS handshakes in progress: a connection past it is
 * closed before TLS starts and counted in /metrics; once the pending ones go
 * away, a new TLS connection is admitted again.
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

function tlsHandshake(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tlsConnect(
      { port, host: '127.0.0.1', rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] },
      () => {
        socket.destroy();
        resolve(true);
      },
    );
    socket.once('error', () => resolve(false));
  });
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
      deadlines: { handshakeMs: 600_000 },
    });
  });
  afterAll(async () => {
    await hub.close();
  });

  it('closes the connection past the bound before TLS, and admits again once the pending ones go', async () => {
    // The hub accepts connections in the order they were made: the first two take the places.
    const first = await rawConnect(hub.port);
    const second = await rawConnect(hub.port);
    const third = await rawConnect(hub.port);
    expect(await closure(third)).toBe('closed');
    expect([first.destroyed, second.destroyed]).toEqual([false, false]);
    expect(await tlsHandshake(hub.port)).toBe(false);
    first.destroy();
    second.destroy();
    // The hub frees the places when it sees the two closes, which it learns after the client: try until it has.
    let isAdmitted = false;
    for (let attempt = 0; attempt < 50 && !isAdmitted; attempt += 1) isAdmitted = await tlsHandshake(hub.port);
    expect(isAdmitted).toBe(true);
  }, 60_000);
});
