/**
 * The hub's end of an upgraded connection (exec, attach, port-forward) once
 * its tunnel stream has closed: the last bytes still queued for the client
 * (an exec's exit status) must reach it; only a reset stream, or a client
 * that never reads them, loses them.
 */
import { once } from 'node:events';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAfterFlush } from '../../../../src/tunnel/relay.js';

/** More than the kernel's socket buffers hold, so most of it waits in the socket's own write queue. */
const QUEUED_BYTES = 32 * 1024 * 1024;

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A connected pair: `hubSide` writes, `client` reads (paused until the test resumes it). */
async function socketPair(): Promise<{ hubSide: Socket; client: Socket }> {
  const server = createServer({ allowHalfOpen: true });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const client = connect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true });
  client.pause();
  const [hubSide] = (await once(server, 'connection')) as [Socket];
  cleanups.push(() => {
    client.destroy();
    hubSide.destroy();
    server.close();
  });
  return { hubSide, client };
}

/** Everything the client reads until the hub side's end. */
async function readAll(client: Socket): Promise<number> {
  let total = 0;
  client.on('data', (chunk: Buffer) => (total += chunk.length));
  client.resume();
  await once(client, 'end');
  return total;
}

describe('closing the client socket of an upgrade', () => {
  it('delivers every queued byte of a stream that ended, then closes', async () => {
    const { hubSide, client } = await socketPair();
    hubSide.write(Buffer.alloc(QUEUED_BYTES, 7));
    hubSide.end();
    expect(hubSide.writableLength).toBeGreaterThan(0); // the bytes are still queued when the stream closes
    closeAfterFlush(hubSide, 60_000);
    expect(await readAll(client)).toBe(QUEUED_BYTES);
    client.end();
    await once(hubSide, 'close');
  });

  it('destroys at once a socket whose stream did not end (a reset)', async () => {
    const { hubSide } = await socketPair();
    hubSide.write(Buffer.alloc(1024));
    closeAfterFlush(hubSide, 60_000);
    expect(hubSide.destroyed).toBe(true);
  });

  it('destroys a socket whose client never reads its last bytes, after the grace', async () => {
    const { hubSide } = await socketPair();
    hubSide.write(Buffer.alloc(QUEUED_BYTES));
    hubSide.end();
    closeAfterFlush(hubSide, 50);
    await once(hubSide, 'close');
    expect(hubSide.destroyed).toBe(true);
  });
});
