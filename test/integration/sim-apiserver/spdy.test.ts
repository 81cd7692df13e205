/**
 * The SPDY/3.1 codec the simulated API server uses for kubectl
 * port-forward: header blocks in both directions against zlib itself (the
 * peer's compressor is a real zlib stream with the SPDY dictionary), the
 * sync-flush shape of the blocks it writes, and frame parsing across
 * arbitrary chunk boundaries.
 */
import { constants as zlibConstants, createDeflate, createInflate } from 'node:zlib';
import type { Deflate, Inflate } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  FLAG,
  FRAME_TYPE,
  HEADER_DICTIONARY,
  HeaderBlockReader,
  HeaderBlockWriter,
  SpdyFrameParser,
  adler32,
  encodeDataFrameHeader,
  encodeNameValueBlock,
  encodePing,
  encodeSynReply,
} from '../../support/sim-apiserver/spdy.js';
import type { SpdyHeaders } from '../../support/sim-apiserver/spdy.js';

/** Runs one sync-flushed write through a zlib stream and collects what it emits. */
async function flushThrough(stream: Deflate | Inflate, input: Buffer): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const collect = (chunk: Buffer): void => {
    chunks.push(chunk);
  };
  stream.on('data', collect);
  stream.write(input);
  await new Promise<void>((resolve) => stream.flush(zlibConstants.Z_SYNC_FLUSH, () => resolve()));
  await new Promise<void>((resolve) => setImmediate(resolve));
  stream.off('data', collect);
  return Buffer.concat(chunks);
}

describe('SPDY header blocks', () => {
  it('uses the SPDY/3 dictionary whose zlib id is the one kubectl writes (0xe3c6a7c2)', () => {
    expect(HEADER_DICTIONARY.length).toBe(1423);
    expect(adler32(HEADER_DICTIONARY)).toBe(0xe3c6a7c2);
  });

  it('writes blocks that a zlib inflater with the dictionary reads back, one session-long stream', async () => {
    const writer = new HeaderBlockWriter();
    const inflate = createInflate({ dictionary: HEADER_DICTIONARY });
    const first = writer.write({ streamtype: ['error'], port: ['80'], requestid: ['0'] });
    const second = writer.write({ streamtype: ['data'], port: ['80'], requestid: ['0'] });
    // Only the first block starts the zlib stream (0x78 0xf9 + dictionary id); each ends like a sync flush.
    expect(first.subarray(0, 2)).toEqual(Buffer.from([0x78, 0xf9]));
    expect(first.readUInt32BE(2)).toBe(adler32(HEADER_DICTIONARY));
    expect(second[0]).toBe(0x00);
    for (const block of [first, second]) expect(block.subarray(-5)).toEqual(Buffer.from([0, 0, 0, 0xff, 0xff]));
    expect(await flushThrough(inflate, first)).toEqual(
      encodeNameValueBlock({ streamtype: ['error'], port: ['80'], requestid: ['0'] }),
    );
    expect(await flushThrough(inflate, second)).toEqual(
      encodeNameValueBlock({ streamtype: ['data'], port: ['80'], requestid: ['0'] }),
    );
    inflate.destroy();
  });

  it('reads blocks compressed by a peer with back-references across blocks', async () => {
    const deflate = createDeflate({ dictionary: HEADER_DICTIONARY, level: 9 });
    const reader = new HeaderBlockReader();
    const headers: SpdyHeaders[] = [
      { port: ['8080'], streamtype: ['error'], requestid: ['7'] },
      { port: ['8080'], streamtype: ['data'], requestid: ['7'] },
      { port: ['9090'], streamtype: ['error'], requestid: ['8'], extra: ['a', 'b'] },
    ];
    for (const h of headers) {
      const compressed = await flushThrough(deflate, encodeNameValueBlock(h));
      expect(await reader.read(compressed)).toEqual(h);
    }
    deflate.destroy();
    reader.close();
  });

  it('refuses a stream whose zlib header names another dictionary', async () => {
    const reader = new HeaderBlockReader();
    const block = new HeaderBlockWriter().write({ port: ['1'] });
    block.writeUInt32BE(0x01020304, 2);
    await expect(reader.read(block)).rejects.toThrow(/dictionary/i);
    reader.close();
  });
});

describe('SPDY frames', () => {
  it('parses control and data frames split at every byte', () => {
    const writer = new HeaderBlockWriter();
    const stream = Buffer.concat([
      encodeSynReply(1, writer.write({})),
      encodeDataFrameHeader(3, FLAG.fin, 5),
      Buffer.from('hello'),
      encodePing(7),
    ]);
    const whole = new SpdyFrameParser().push(stream);
    expect(
      whole.map((f) =>
        f.kind === 'control' ? `control:${f.type}` : `data:${f.streamId}:${f.flags}:${f.data.toString()}`,
      ),
    ).toEqual([`control:${FRAME_TYPE.synReply}`, 'data:3:1:hello', `control:${FRAME_TYPE.ping}`]);
    const parser = new SpdyFrameParser();
    const piecewise = [...stream].flatMap((byte) => parser.push(Buffer.of(byte)));
    expect(piecewise).toEqual(whole);
  });
});
