/**
 * forwardBody: the answer's body on the proxied request path (agent: API
 * server answer into the tunnel stream; hub: tunnel stream to the user).
 */
import { once } from 'node:events';
import { connect as http2Connect, createServer as createHttp2Server } from 'node:http2';
import { Readable, Writable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { forwardBody } from '../../../src/tunnel/forward-body.js';

/** A target whose writes complete only when the test says so. */
function heldTarget(highWaterMark = 16 * 1024): {
  target: Writable;
  received: Buffer[];
  release: () => void;
  held: () => number;
} {
  const received: Buffer[] = [];
  const callbacks: (() => void)[] = [];
  const target = new Writable({
    highWaterMark,
    write(chunk: Buffer, _encoding, callback) {
      received.push(chunk);
      callbacks.push(() => callback());
    },
  });
  return {
    target,
    received,
    release: () => {
      for (const callback of callbacks.splice(0)) callback();
    },
    held: () => callbacks.length,
  };
}

describe('forwardBody', () => {
  it('ends an HTTP/2 stream target only once its last write has completed', async () => {
    const { target, received, release, held } = heldTarget();
    const source = Readable.from([Buffer.from('a'), Buffer.from('b')], { objectMode: false });
    forwardBody(source, target, { isEndAfterWrites: true });
    await once(source, 'end');
    expect(held()).toBe(1);
    expect(target.writableEnded).toBe(false);
    release();
    await new Promise((resolve) => setImmediate(resolve));
    release();
    await once(target, 'finish');
    expect(Buffer.concat(received).toString()).toBe('ab');
  });

  it('ends an HTTP/1 answer in the same turn as its source, before the writes complete', async () => {
    const { target, received, release } = heldTarget();
    const source = Readable.from([Buffer.from('a'), Buffer.from('b')], { objectMode: false });
    forwardBody(source, target, { isEndAfterWrites: false });
    await once(source, 'end');
    // The hub closes the answer when the tunnel stream closes; it must be ended by then.
    expect(target.writableEnded).toBe(true);
    release();
    await new Promise((resolve) => setImmediate(resolve));
    release();
    await once(target, 'finish');
    expect(Buffer.concat(received).toString()).toBe('ab');
  });

  it('pauses the source while the target is full and delivers every byte in order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 4096, size: 'max' }), { minLength: 1, maxLength: 40 }),
        fc.boolean(),
        async (chunks, isEndAfterWrites) => {
          const { target, received, release } = heldTarget(1024);
          const source = new Readable({ read() {} });
          for (const chunk of chunks) source.push(Buffer.from(chunk));
          source.push(null);
          let pauses = 0;
          const pause = source.pause.bind(source);
          source.pause = () => {
            pauses += 1;
            return pause();
          };
          forwardBody(source, target, { isEndAfterWrites });
          const finished = once(target, 'finish');
          while (!target.writableFinished) {
            release();
            await new Promise((resolve) => setImmediate(resolve));
          }
          await finished;
          expect(Buffer.concat(received)).toEqual(Buffer.concat(chunks.map((c) => Buffer.from(c))));
          const total = chunks.reduce((sum, c) => sum + c.length, 0);
          // A write that fills the target's buffer (1 KiB) pauses the source.
          if (chunks.length > 1 && total - (chunks.at(-1)?.length ?? 0) >= 1024) expect(pauses).toBeGreaterThan(0);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('stops writing to a target destroyed on the way, without throwing', async () => {
    const { target, received } = heldTarget();
    const source = new Readable({ read() {} });
    forwardBody(source, target, { isEndAfterWrites: true });
    source.push(Buffer.from('first'));
    await new Promise((resolve) => setImmediate(resolve));
    target.destroy();
    source.push(Buffer.from('second'));
    source.push(null);
    await once(source, 'end');
    expect(Buffer.concat(received).toString()).toBe('first');
    expect(target.writableEnded).toBe(false);
  });

  it('carries a body through a real HTTP/2 stream whole, with flow control', async () => {
    const body = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i < body.length; i += 1) body[i] = (i * 31) % 251;
    const server = createHttp2Server({ settings: { initialWindowSize: 65_535 } });
    server.on('stream', (stream) => {
      stream.respond({ ':status': 200 });
      const source = Readable.from(
        Array.from({ length: Math.ceil(body.length / 50_000) }, (_, i) => body.subarray(i * 50_000, (i + 1) * 50_000)),
        { objectMode: false },
      );
      forwardBody(source, stream, { isEndAfterWrites: true });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    const client = http2Connect(`http://127.0.0.1:${port}`);
    const request = client.request({ ':path': '/' }, { endStream: true });
    const parts: Buffer[] = [];
    request.on('data', (chunk: Buffer) => parts.push(chunk));
    await once(request, 'end');
    client.close();
    server.close();
    expect(Buffer.concat(parts).equals(body)).toBe(true);
  });
});
