/**
 * The WebSocket protocol (RFC 6455) as a pure codec, for the simulated API
 * server's exec and port-forward endpoints: frame encoding (with or without
 * a client mask), and a receiver state machine that is fed bytes and yields
 * complete messages and control frames. It checks what the RFC requires of a
 * peer — masking by role, reserved bits, control frame size and
 * fragmentation, continuation order, UTF-8 text, close codes — and reports
 * violations as {@link WebSocketProtocolError} with a stable code and the
 * close code to answer with. Extensions (permessage-deflate) are not
 * negotiated, so reserved bits must be zero.
 */
import { createHash, randomBytes } from 'node:crypto';

/** Frame opcodes. */
export const OPCODE = {
  continuation: 0x0,
  text: 0x1,
  binary: 0x2,
  close: 0x8,
  ping: 0x9,
  pong: 0xa,
} as const;

/** Close status codes used by the simulation. */
export const CLOSE_CODE = {
  normal: 1000,
  goingAway: 1001,
  protocolError: 1002,
  unsupportedData: 1003,
  noStatus: 1005,
  abnormal: 1006,
  invalidPayload: 1007,
  policyViolation: 1008,
  messageTooBig: 1009,
  internalError: 1011,
} as const;

/** The GUID that RFC 6455 §1.3 appends to the client key. */
const HANDSHAKE_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** Largest payload of a control frame (RFC 6455 §5.5). */
const MAX_CONTROL_PAYLOAD = 125;
/** Default bound on one (reassembled) message. */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/** A protocol violation by the peer, with a stable code and the close code to send. */
export class WebSocketProtocolError extends Error {
  readonly code: string;
  readonly closeCode: number;

  constructor(code: string, closeCode: number, message: string) {
    super(message);
    this.name = 'WebSocketProtocolError';
    this.code = code;
    this.closeCode = closeCode;
  }
}

/** `Sec-WebSocket-Accept` for a client's `Sec-WebSocket-Key`. */
export function acceptKeyFor(clientKey: string): string {
  return createHash('sha1')
    .update(clientKey + HANDSHAKE_GUID)
    .digest('base64');
}

/** One frame to encode. */
export interface OutgoingFrame {
  opcode: number;
  payload: Buffer;
  /** False for all but the last fragment of a message. */
  fin?: boolean;
  /** Clients mask every frame (RFC 6455 §5.3); pass a 4-byte key, or `true` for a random one. */
  mask?: Buffer | boolean;
}

/** The frame header for a payload (and, when masking, the masked payload). */
export function encodeFrameHeader(frame: OutgoingFrame): { header: Buffer; payload: Buffer } {
  const length = frame.payload.length;
  const maskKey = frame.mask === true ? randomBytes(4) : frame.mask instanceof Buffer ? frame.mask : undefined;
  const lengthBytes = length < 126 ? 0 : length <= 0xffff ? 2 : 8;
  const header = Buffer.alloc(2 + lengthBytes + (maskKey ? 4 : 0));
  header[0] = (frame.fin === false ? 0 : 0x80) | (frame.opcode & 0x0f);
  if (lengthBytes === 0) header[1] = length;
  else if (lengthBytes === 2) {
    header[1] = 126;
    header.writeUInt16BE(length, 2);
  } else {
    header[1] = 127;
    header.writeBigUInt64BE(BigInt(length), 2);
  }
  if (!maskKey) return { header, payload: frame.payload };
  header[1] = (header[1] ?? 0) | 0x80;
  maskKey.copy(header, 2 + lengthBytes);
  return { header, payload: applyMask(frame.payload, maskKey) };
}

/** Encodes one frame into a single buffer. */
export function encodeFrame(frame: OutgoingFrame): Buffer {
  const { header, payload } = encodeFrameHeader(frame);
  return Buffer.concat([header, payload]);
}

/** The payload of a close frame: the status code and a UTF-8 reason. */
export function encodeClosePayload(code: number, reason = ''): Buffer {
  const text = Buffer.from(reason, 'utf8').subarray(0, MAX_CONTROL_PAYLOAD - 2);
  const payload = Buffer.alloc(2 + text.length);
  payload.writeUInt16BE(code, 0);
  text.copy(payload, 2);
  return payload;
}

/** XORs data with a 4-byte masking key into a new buffer (masking and unmasking are the same). */
export function applyMask(data: Buffer, key: Buffer): Buffer {
  const out = Buffer.allocUnsafeSlow(data.length);
  data.copy(out);
  // Four bytes at a time through a 32-bit view (the key in the platform's byte order), then the tail.
  const words = Math.floor(data.length / 4);
  if (words > 0) {
    const keyWord =
      new Uint32Array(new Uint8Array([key[0] ?? 0, key[1] ?? 0, key[2] ?? 0, key[3] ?? 0]).buffer)[0] ?? 0;
    const view = new Uint32Array(out.buffer, out.byteOffset, words);
    for (let i = 0; i < words; i++) view[i] = (view[i] ?? 0) ^ keyWord;
  }
  for (let i = words * 4; i < data.length; i++) out[i] = (data[i] ?? 0) ^ (key[i & 3] ?? 0);
  return out;
}

/** What the receiver yields. */
export type ReceivedEvent =
  | { type: 'message'; isBinary: boolean; data: Buffer }
  | { type: 'ping'; data: Buffer }
  | { type: 'pong'; data: Buffer }
  | { type: 'close'; code: number; reason: string };

/** Options of a {@link WebSocketReceiver}. */
export interface ReceiverOptions {
  /** `server` requires masked frames from the peer, `client` requires unmasked ones. */
  role: 'server' | 'client';
  maxMessageBytes?: number;
}

function isValidCloseCode(code: number): boolean {
  if (code >= 3000 && code <= 4999) return true;
  return code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function decodeUtf8(data: Buffer, what: string): string {
  try {
    return utf8.decode(data);
  } catch {
    throw new WebSocketProtocolError('WS_ERR_INVALID_UTF8', CLOSE_CODE.invalidPayload, `invalid UTF-8 in ${what}`);
  }
}

/**
 * Parses a byte stream from the peer into messages and control frames.
 * Feed it with {@link WebSocketReceiver.push}; it keeps partial frames and
 * fragmented messages between calls.
 */
export class WebSocketReceiver {
  readonly #role: 'server' | 'client';
  readonly #maxMessageBytes: number;
  /**
   * Unparsed bytes as received. Chunks are joined only when a frame needs
   * bytes from more than one of them, and frames are cut out as views, so
   * each byte is copied at most once however the peer fragments its writes.
   */
  #chunks: Buffer[] = [];
  #length = 0;
  #fragments: Buffer[] = [];
  #fragmentsLength = 0;
  #fragmentOpcode: number | undefined;
  #isClosed = false;

  constructor(options: ReceiverOptions) {
    this.#role = options.role;
    this.#maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  }

  /** Adds bytes and returns every event they complete. Throws on a protocol violation. */
  push(chunk: Buffer): ReceivedEvent[] {
    if (this.#isClosed) return [];
    this.#chunks.push(chunk);
    this.#length += chunk.length;
    const events: ReceivedEvent[] = [];
    for (;;) {
      const event = this.#next();
      if (event === null) break;
      if (event !== undefined) events.push(event);
      if (event?.type === 'close') {
        this.#isClosed = true;
        break;
      }
    }
    return events;
  }

  #peek(length: number): Buffer | undefined {
    if (this.#length < length) return undefined;
    if ((this.#chunks[0]?.length ?? 0) < length) this.#chunks = [Buffer.concat(this.#chunks, this.#length)];
    return this.#chunks[0];
  }

  #consume(length: number): Buffer {
    const first = this.#peek(length) as Buffer;
    const taken = first.subarray(0, length);
    const rest = first.subarray(length);
    if (rest.length > 0) this.#chunks[0] = rest;
    else this.#chunks.shift();
    this.#length -= length;
    return taken;
  }

  /** One frame's event; `undefined` for a frame that completes nothing; `null` when more bytes are needed. */
  #next(): ReceivedEvent | undefined | null {
    const head = this.#peek(2);
    if (!head) return null;
    const b0 = head[0] ?? 0;
    const b1 = head[1] ?? 0;
    const fin = (b0 & 0x80) !== 0;
    const opcode = b0 & 0x0f;
    const isMasked = (b1 & 0x80) !== 0;
    let length = b1 & 0x7f;
    let offset = 2;
    if ((b0 & 0x70) !== 0) {
      throw new WebSocketProtocolError(
        'WS_ERR_UNEXPECTED_RSV',
        CLOSE_CODE.protocolError,
        'reserved bits set without a negotiated extension',
      );
    }
    const isControl = (opcode & 0x08) !== 0;
    if (
      ![OPCODE.continuation, OPCODE.text, OPCODE.binary, OPCODE.close, OPCODE.ping, OPCODE.pong].includes(opcode as 0)
    ) {
      throw new WebSocketProtocolError('WS_ERR_INVALID_OPCODE', CLOSE_CODE.protocolError, `invalid opcode ${opcode}`);
    }
    if (this.#role === 'server' && !isMasked) {
      throw new WebSocketProtocolError(
        'WS_ERR_EXPECTED_MASK',
        CLOSE_CODE.protocolError,
        'client frames must be masked',
      );
    }
    if (this.#role === 'client' && isMasked) {
      throw new WebSocketProtocolError(
        'WS_ERR_UNEXPECTED_MASK',
        CLOSE_CODE.protocolError,
        'server frames must not be masked',
      );
    }
    if (length === 126) {
      const ext = this.#peek(4);
      if (!ext) return null;
      length = ext.readUInt16BE(2);
      offset = 4;
    } else if (length === 127) {
      const ext = this.#peek(10);
      if (!ext) return null;
      const big = ext.readBigUInt64BE(2);
      if (big > BigInt(Number.MAX_SAFE_INTEGER) || (ext[2] ?? 0) & 0x80) {
        throw new WebSocketProtocolError(
          'WS_ERR_UNSUPPORTED_DATA_PAYLOAD_LENGTH',
          CLOSE_CODE.messageTooBig,
          'payload length too large',
        );
      }
      length = Number(big);
      offset = 10;
    }
    if (isControl && (!fin || length > MAX_CONTROL_PAYLOAD)) {
      throw new WebSocketProtocolError(
        'WS_ERR_INVALID_CONTROL_FRAME',
        CLOSE_CODE.protocolError,
        'control frames must be whole and at most 125 bytes',
      );
    }
    if (!isControl && this.#fragmentsLength + length > this.#maxMessageBytes) {
      throw new WebSocketProtocolError(
        'WS_ERR_MESSAGE_TOO_BIG',
        CLOSE_CODE.messageTooBig,
        `message exceeds ${this.#maxMessageBytes} bytes`,
      );
    }
    const total = offset + (isMasked ? 4 : 0) + length;
    if (this.#length < total) return null;
    const frame = this.#consume(total);
    let payload = frame.subarray(offset + (isMasked ? 4 : 0));
    if (isMasked) payload = applyMask(payload, frame.subarray(offset, offset + 4));

    if (isControl) return this.#control(opcode, payload);
    if (opcode === OPCODE.continuation) {
      if (this.#fragmentOpcode === undefined) {
        throw new WebSocketProtocolError(
          'WS_ERR_UNEXPECTED_CONTINUATION',
          CLOSE_CODE.protocolError,
          'continuation frame without a message in progress',
        );
      }
    } else if (this.#fragmentOpcode !== undefined) {
      throw new WebSocketProtocolError(
        'WS_ERR_EXPECTED_CONTINUATION',
        CLOSE_CODE.protocolError,
        'new message before the previous one was finished',
      );
    } else {
      this.#fragmentOpcode = opcode;
    }
    this.#fragments.push(payload);
    this.#fragmentsLength += payload.length;
    if (!fin) return undefined;
    const data = this.#fragments.length === 1 ? (this.#fragments[0] as Buffer) : Buffer.concat(this.#fragments);
    const isBinary = this.#fragmentOpcode === OPCODE.binary;
    this.#fragments = [];
    this.#fragmentsLength = 0;
    this.#fragmentOpcode = undefined;
    if (!isBinary) decodeUtf8(data, 'a text message');
    return { type: 'message', isBinary, data };
  }

  #control(opcode: number, payload: Buffer): ReceivedEvent {
    if (opcode === OPCODE.ping) return { type: 'ping', data: payload };
    if (opcode === OPCODE.pong) return { type: 'pong', data: payload };
    if (payload.length === 0) return { type: 'close', code: CLOSE_CODE.noStatus, reason: '' };
    if (payload.length === 1) {
      throw new WebSocketProtocolError(
        'WS_ERR_INVALID_CLOSE_PAYLOAD',
        CLOSE_CODE.protocolError,
        'close payload of one byte',
      );
    }
    const code = payload.readUInt16BE(0);
    if (!isValidCloseCode(code)) {
      throw new WebSocketProtocolError(
        'WS_ERR_INVALID_CLOSE_CODE',
        CLOSE_CODE.protocolError,
        `invalid close code ${code}`,
      );
    }
    return { type: 'close', code, reason: decodeUtf8(payload.subarray(2), 'a close reason') };
  }
}
