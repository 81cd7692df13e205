/**
 * The relay of an upgraded connection (exec, attach, port-forward) hands
 * over every byte an end wrote before it closed, and ends the other side
 * after them. The case that broke on a real API server: the server writes
 * its last frames and closes at once, while the side they go to (the tunnel
 * stream) takes its writes slowly.
 */
import { once } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { relayBothWays } from '../../../src/tunnel/relay.js';

/** A stream end that takes each write after a delay (a tunnel stream under flow control) and sends nothing. */
function slowSink(): { side: Duplex; received: () => number; ended: Promise<void> } {
  let received = 0;
  let markEnded: () => void = () => {};
  const ended = new Promise<void>((resolve) => (markEnded = resolve));
  const side = new Duplex({
    highWaterMark: 16 * 1024,
    read() {},
    write(chunk: Buffer, _encoding, callback) {
      received += chunk.length;
      setTimeout(callback, 2);
    },
    final(callback) {
      markEnded();
      callback();
    },
  });
  return { side, received: () => received, ended };
}

describe('relayBothWays', () => {
  let server: Server | undefined;
  afterEach(() => server?.close());

  async function closingServer(payload: Buffer): Promise<Socket> {
    server = createServer((socket) => socket.end(payload));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    return socket;
  }

  it('hands over every byte a side wrote before it closed, then ends the other side', async () => {
    const payload = Buffer.alloc(512 * 1024, 7);
    const socket = await closingServer(payload);
    const sink = slowSink();
    relayBothWays(sink.side, socket);
    const destroyedFirst = once(sink.side, 'close').then(() => {
      throw new Error(`the slow side was destroyed before its end, after ${sink.received()} bytes`);
    });
    await Promise.race([sink.ended, destroyedFirst]);
    expect(sink.received()).toBe(payload.length);
    expect(sink.side.destroyed).toBe(false);
  });

  it('destroys the other side when one fails: a broken connection owes nothing', async () => {
    const socket = await closingServer(Buffer.alloc(0));
    const sink = slowSink();
    relayBothWays(sink.side, socket);
    const closed = once(socket, 'close');
    sink.side.destroy(new Error('stream reset by the hub'));
    await closed;
    expect(socket.destroyed).toBe(true);
  });
});
