/**
 * The hub's bound on TLS handshakes in progress: a connection past it is
 * closed before TLS starts and counted in /metrics; once the pending ones go
 * away, a new TLS connection is admitted again.
 */
import { mkdtempSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type RunningHub } from '../../../src/hub/hub-server.js';
import { silentLogger } from '../../../src/log/run-log.js';

function rawConnect(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = netConnect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

function closedWithin(socket: Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (socket.destroyed || socket.readableEnded) return resolve(true);
    const timer = setTimeout(() => resolve(false), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
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
    hub = await startHub({ listen: '127.0.0.1:0', dataDir, logger: silentLogger, maxPendingHandshakes: 2 });
  });
  afterAll(async () => {
    await hub.close();
  });

  it('closes the connection past the bound before TLS, and admits again once the pending ones go', async () => {
    const first = await rawConnect(hub.port);
    const second = await rawConnect(hub.port);
    await sleep(200);
    const third = await rawConnect(hub.port);
    expect(await closedWithin(third, 3000)).toBe(true);
    expect(await closedWithin(first, 300)).toBe(false);
    expect(await tlsHandshake(hub.port)).toBe(false);
    first.destroy();
    second.destroy();
    await sleep(300);
    expect(await tlsHandshake(hub.port)).toBe(true);
  }, 60_000);
});
