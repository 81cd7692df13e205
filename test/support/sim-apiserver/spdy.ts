/**
 * The part of SPDY/3.1 that Kubernetes port-forwarding uses, as a codec:
 * frame encoding and a streaming frame parser (control frames SYN_STREAM,
 * SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE, and
 * data frames), and header blocks.
 *
 * kubectl still speaks SPDY for `port-forward`: directly after an
 * `Upgrade: SPDY/3.1` handshake, or — its default since 1.31 — tunnelled
 * inside WebSocket binary messages (subprotocol
 * `SPDY/3.1+portforward.k8s.io`). The SPDY/3 draft (§2.6.10) compresses
 * header blocks with one zlib stream per direction, primed with a fixed
 * dictionary. Incoming blocks are inflated with Node's zlib; outgoing blocks
 * are written as zlib "stored" (uncompressed) deflate blocks, each followed by
 * the empty block of a sync flush, which every inflater accepts and which
 * keeps the writer synchronous.
 */
import { constants as zlibConstants, createInflate } from 'node:zlib';
import type { Inflate } from 'node:zlib';

/** SPDY protocol version carried in control frames. */
export const SPDY_VERSION = 3;

/** Control frame types. */
export const FRAME_TYPE = {
  synStream: 1,
  synReply: 2,
  rstStream: 3,
  settings: 4,
  ping: 6,
  goAway: 7,
  headers: 8,
  windowUpdate: 9,
} as const;

/** Frame flags. */
export const FLAG = { fin: 0x01, unidirectional: 0x02 } as const;

/** RST_STREAM status codes used by the simulation. */
export const RST_STATUS = {
  protocolError: 1,
  invalidStream: 2,
  refusedStream: 3,
  cancel: 5,
  internalError: 6,
} as const;

/** The largest frame payload SPDY can express (24-bit length). */
export const MAX_FRAME_PAYLOAD = 0xffffff;

/** Header block dictionary of SPDY/3 (draft 3, §2.6.10.1): length-prefixed names, then a block of common values. */
function buildHeaderDictionary(): Buffer {
  const names = [
    'options',
    'head',
    'post',
    'put',
    'delete',
    'trace',
    'accept',
    'accept-charset',
    'accept-encoding',
    'accept-language',
    'accept-ranges',
    'age',
    'allow',
    'authorization',
    'cache-control',
    'connection',
    'content-base',
    'content-encoding',
    'content-language',
    'content-length',
    'content-location',
    'content-md5',
    'content-range',
    'content-type',
    'date',
    'etag',
    'expect',
    'expires',
    'from',
    'host',
    'if-match',
    'if-modified-since',
    'if-none-match',
    'if-range',
    'if-unmodified-since',
    'last-modified',
    'location',
    'max-forwards',
    'pragma',
    'proxy-authenticate',
    'proxy-authorization',
    'range',
    'referer',
    'retry-after',
    'server',
    'te',
    'trailer',
    'transfer-encoding',
    'upgrade',
    'user-agent',
    'vary',
    'via',
    'warning',
    'www-authenticate',
    'method',
    'get',
    'status',
    '200 OK',
    'version',
    'HTTP/1.1',
    'url',
    'public',
    'set-cookie',
    'keep-alive',
    'origin',
  ];
  const tail =
    '100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505' +
    '203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized' +
    '403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable' +
    'Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT' +
    'chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,' +
    'text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.';
  const parts: Buffer[] = [];
  for (const name of names) {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(name.length, 0);
    parts.push(length, Buffer.from(name, 'latin1'));
  }
  parts.push(Buffer.from(tail, 'latin1'));
  return Buffer.concat(parts);
}

/** The SPDY/3 header compression dictionary. */
export const HEADER_DICTIONARY: Buffer = buildHeaderDictionary();

/** Adler-32 checksum (RFC 1950), the zlib header's dictionary id. */
export function adler32(data: Buffer): number {
  const MOD = 65521;
  let a = 1;
  let b = 0;
  for (const byte of data) {
    a = (a + byte) % MOD;
    b = (b + a) % MOD;
  }
  return ((b << 16) | a) >>> 0;
}

/** Header names and values; SPDY joins repeated values with NUL. */
export type SpdyHeaders = Record<string, string[]>;

/** A parsed frame. */
export type SpdyFrame =
  | { kind: 'data'; streamId: number; flags: number; data: Buffer }
  | { kind: 'control'; type: number; flags: number; payload: Buffer };

/** Serializes headers into an (uncompressed) SPDY/3 name/value block. */
export function encodeNameValueBlock(headers: SpdyHeaders): Buffer {
  const entries = Object.entries(headers);
  const parts: Buffer[] = [];
  const count = Buffer.alloc(4);
  count.writeUInt32BE(entries.length, 0);
  parts.push(count);
  for (const [name, values] of entries) {
    for (const text of [name.toLowerCase(), values.join('\u0000')]) {
      const bytes = Buffer.from(text, 'utf8');
      const length = Buffer.alloc(4);
      length.writeUInt32BE(bytes.length, 0);
      parts.push(length, bytes);
    }
  }
  return Buffer.concat(parts);
}

/** Parses an uncompressed SPDY/3 name/value block. */
export function decodeNameValueBlock(block: Buffer): SpdyHeaders {
  const headers: SpdyHeaders = {};
  let offset = 0;
  const readString = (): string => {
    if (offset + 4 > block.length) throw new Error('truncated SPDY header block');
    const length = block.readUInt32BE(offset);
    offset += 4;
    if (offset + length > block.length) throw new Error('truncated SPDY header block');
    const text = block.subarray(offset, offset + length).toString('utf8');
    offset += length;
    return text;
  };
  if (block.length < 4) throw new Error('truncated SPDY header block');
  const count = block.readUInt32BE(0);
  offset = 4;
  for (let i = 0; i < count; i++) {
    const name = readString().toLowerCase();
    headers[name] = readString().split('\u0000');
  }
  return headers;
}

/** Largest payload of one stored deflate block. */
const STORED_BLOCK_LIMIT = 0xffff;
/** An empty non-final stored block: what a zlib sync flush writes. */
const SYNC_FLUSH_MARKER = Buffer.from([0x00, 0x00, 0x00, 0xff, 0xff]);

/**
 * Compresses header blocks for one direction of a session. Output is a
 * single zlib stream (with the dictionary id in its header) made of
 * non-final stored blocks, so each block is complete and byte-aligned.
 */
export class HeaderBlockWriter {
  #hasWrittenHeader = false;

  /** The compressed form of `headers` for the next frame. */
  write(headers: SpdyHeaders): Buffer {
    const raw = encodeNameValueBlock(headers);
    const parts: Buffer[] = [];
    if (!this.#hasWrittenHeader) {
      this.#hasWrittenHeader = true;
      // CMF 0x78: deflate, 32 KiB window. FLG 0xF9: FDICT set, FLEVEL 3, FCHECK making CMF*256+FLG a multiple of 31.
      const zlibHeader = Buffer.alloc(6);
      zlibHeader[0] = 0x78;
      zlibHeader[1] = 0xf9;
      zlibHeader.writeUInt32BE(adler32(HEADER_DICTIONARY), 2);
      parts.push(zlibHeader);
    }
    for (let offset = 0; offset < raw.length; offset += STORED_BLOCK_LIMIT) {
      const piece = raw.subarray(offset, offset + STORED_BLOCK_LIMIT);
      const blockHeader = Buffer.alloc(5);
      blockHeader[0] = 0x00; // BFINAL=0, BTYPE=00 (stored), padded to the byte boundary
      blockHeader.writeUInt16LE(piece.length, 1);
      blockHeader.writeUInt16LE(~piece.length & 0xffff, 3);
      parts.push(blockHeader, piece);
    }
    // End with an empty stored block, exactly as a zlib Z_SYNC_FLUSH does: inflaters that
    // hold a stored block's bytes until the next block header (Go's compress/flate does)
    // release them on this marker instead of reading past the frame.
    parts.push(SYNC_FLUSH_MARKER);
    return Buffer.concat(parts);
  }
}

/**
 * Inflates the peer's header blocks: one zlib stream for the whole session,
 * primed with the SPDY dictionary, flushed after every block.
 */
export class HeaderBlockReader {
  readonly #inflate: Inflate;
  #output: Buffer[] = [];
  #failure: Error | undefined;
  #rejectPending: ((error: Error) => void) | undefined;

  constructor() {
    this.#inflate = createInflate({ dictionary: HEADER_DICTIONARY });
    this.#inflate.on('data', (chunk: Buffer) => this.#output.push(chunk));
    this.#inflate.on('error', (error: Error) => {
      this.#failure = error;
      this.#rejectPending?.(error);
    });
  }

  /** Inflates one compressed block (calls must not overlap) and parses its headers. */
  read(compressed: Buffer): Promise<SpdyHeaders> {
    return new Promise((resolve, reject) => {
      if (this.#failure) {
        reject(this.#failure);
        return;
      }
      this.#rejectPending = reject;
      this.#inflate.write(compressed);
      this.#inflate.flush(zlibConstants.Z_SYNC_FLUSH, () => {
        // 'data' events for the flushed output are emitted before the next macrotask.
        setImmediate(() => {
          this.#rejectPending = undefined;
          if (this.#failure) {
            reject(this.#failure);
            return;
          }
          const block = Buffer.concat(this.#output);
          this.#output = [];
          try {
            resolve(decodeNameValueBlock(block));
          } catch (error) {
            reject(error as Error);
          }
        });
      });
    });
  }

  /** Releases the inflater. */
  close(): void {
    this.#inflate.destroy();
  }
}

/** Encodes a control frame. */
export function encodeControlFrame(type: number, flags: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt16BE(0x8000 | SPDY_VERSION, 0);
  header.writeUInt16BE(type, 2);
  header.writeUInt32BE(((flags & 0xff) << 24) | (payload.length & 0xffffff), 4);
  return Buffer.concat([header, payload]);
}

/** Encodes a data frame header (the payload is written after it). */
export function encodeDataFrameHeader(streamId: number, flags: number, length: number): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt32BE(streamId & 0x7fffffff, 0);
  header.writeUInt32BE(((flags & 0xff) << 24) | (length & 0xffffff), 4);
  return header;
}

/** SYN_REPLY for a stream, with an already compressed header block. */
export function encodeSynReply(streamId: number, compressedHeaders: Buffer, flags = 0): Buffer {
  const id = Buffer.alloc(4);
  id.writeUInt32BE(streamId & 0x7fffffff, 0);
  return encodeControlFrame(FRAME_TYPE.synReply, flags, Buffer.concat([id, compressedHeaders]));
}

/** SYN_STREAM with an already compressed header block (used by test clients). */
export function encodeSynStream(streamId: number, compressedHeaders: Buffer, flags = 0): Buffer {
  const ids = Buffer.alloc(10);
  ids.writeUInt32BE(streamId & 0x7fffffff, 0);
  ids.writeUInt32BE(0, 4); // associated stream
  ids.writeUInt16BE(0, 8); // priority and slot
  return encodeControlFrame(FRAME_TYPE.synStream, flags, Buffer.concat([ids, compressedHeaders]));
}

/** RST_STREAM. */
export function encodeRstStream(streamId: number, status: number): Buffer {
  const payload = Buffer.alloc(8);
  payload.writeUInt32BE(streamId & 0x7fffffff, 0);
  payload.writeUInt32BE(status, 4);
  return encodeControlFrame(FRAME_TYPE.rstStream, 0, payload);
}

/** PING. */
export function encodePing(id: number): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(id >>> 0, 0);
  return encodeControlFrame(FRAME_TYPE.ping, 0, payload);
}

/** GOAWAY. */
export function encodeGoAway(lastGoodStreamId: number, status = 0): Buffer {
  const payload = Buffer.alloc(8);
  payload.writeUInt32BE(lastGoodStreamId & 0x7fffffff, 0);
  payload.writeUInt32BE(status, 4);
  return encodeControlFrame(FRAME_TYPE.goAway, 0, payload);
}

/** Splits a byte stream into SPDY frames; keeps partial frames between calls. */
export class SpdyFrameParser {
  #chunks: Buffer[] = [];
  #length = 0;

  /** Adds bytes and returns the frames they complete. */
  push(chunk: Buffer): SpdyFrame[] {
    this.#chunks.push(chunk);
    this.#length += chunk.length;
    const frames: SpdyFrame[] = [];
    for (;;) {
      if (this.#length < 8) break;
      const head = this.#contiguous(8);
      const length = head.readUInt32BE(4) & 0xffffff;
      if (this.#length < 8 + length) break;
      const frame = this.#take(8 + length);
      const flags = frame[4] ?? 0;
      if (((frame[0] ?? 0) & 0x80) !== 0) {
        frames.push({ kind: 'control', type: frame.readUInt16BE(2), flags, payload: frame.subarray(8) });
      } else {
        frames.push({ kind: 'data', streamId: frame.readUInt32BE(0) & 0x7fffffff, flags, data: frame.subarray(8) });
      }
    }
    return frames;
  }

  #contiguous(length: number): Buffer {
    if ((this.#chunks[0]?.length ?? 0) < length) this.#chunks = [Buffer.concat(this.#chunks, this.#length)];
    return this.#chunks[0] as Buffer;
  }

  #take(length: number): Buffer {
    const first = this.#contiguous(length);
    const taken = first.subarray(0, length);
    const rest = first.subarray(length);
    if (rest.length > 0) this.#chunks[0] = rest;
    else this.#chunks.shift();
    this.#length -= length;
    return taken;
  }
}
