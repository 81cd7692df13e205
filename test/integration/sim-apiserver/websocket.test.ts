/**
 * The simulated API server's WebSocket codec (RFC 6455), tested by feeding
 * it bytes: the RFC's own examples, every length encoding, arbitrary
 * splitting of the byte stream, fragmentation with interleaved control
 * frames, each protocol violation's stable code, and a connection pair
 * exchanging messages, pings and the closing handshake.
 */
import { duplexPair } from 'node:stream';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  CLOSE_CODE,
  OPCODE,
  WebSocketProtocolError,
  WebSocketReceiver,
  acceptKeyFor,
  encodeClosePayload,
  encodeFrame,
} from '../../support/sim-apiserver/websocket.js';
import type { ReceivedEvent } from '../../support/sim-apiserver/websocket.js';
import { WebSocketConnection } from '../../support/sim-apiserver/websocket-connection.js';

const MASK = Buffer.from([0x37, 0xfa, 0x21, 0x3d]);

function feed(receiver: WebSocketReceiver, bytes: Buffer, chunkSize = bytes.length): ReceivedEvent[] {
  const events: ReceivedEvent[] = [];
  for (let i = 0; i < bytes.length; i += chunkSize) events.push(...receiver.push(bytes.subarray(i, i + chunkSize)));
  return events;
}

function violation(role: 'server' | 'client', bytes: Buffer, maxMessageBytes?: number): WebSocketProtocolError {
  const receiver = new WebSocketReceiver({ role, ...(maxMessageBytes ? { maxMessageBytes } : {}) });
  try {
    receiver.push(bytes);
  } catch (error) {
    if (error instanceof WebSocketProtocolError) return error;
    throw error;
  }
  throw new Error('expected a protocol violation');
}

describe('WebSocket handshake', () => {
  it('derives Sec-WebSocket-Accept as in RFC 6455 §1.3', () => {
    expect(acceptKeyFor('dGhlIHNhbXBsZSBub25jZQ==')).toBe('s3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
  });
});

describe('WebSocket frames', () => {
  it('decodes the RFC 6455 §5.7 examples (masked and unmasked "Hello")', () => {
    const masked = Buffer.from([0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]);
    expect(feed(new WebSocketReceiver({ role: 'server' }), masked)).toEqual([
      { type: 'message', isBinary: false, data: Buffer.from('Hello') },
    ]);
    const unmasked = Buffer.from([0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]);
    expect(feed(new WebSocketReceiver({ role: 'client' }), unmasked)).toEqual([
      { type: 'message', isBinary: false, data: Buffer.from('Hello') },
    ]);
    expect(encodeFrame({ opcode: OPCODE.text, payload: Buffer.from('Hello'), mask: MASK })).toEqual(masked);
    expect(encodeFrame({ opcode: OPCODE.text, payload: Buffer.from('Hello') })).toEqual(unmasked);
  });

  it.each([0, 125, 126, 65_535, 65_536, 200_000])(
    'round-trips a %i-byte binary payload through every length encoding',
    (size) => {
      const payload = Buffer.alloc(size, 0xab);
      const encoded = encodeFrame({ opcode: OPCODE.binary, payload, mask: true });
      const headerBytes = size < 126 ? 2 : size <= 0xffff ? 4 : 10;
      expect(encoded.length).toBe(headerBytes + 4 + size);
      const events = feed(new WebSocketReceiver({ role: 'server' }), encoded);
      expect(events).toHaveLength(1);
      const [event] = events;
      expect(event?.type === 'message' && event.isBinary && event.data.equals(payload)).toBe(true);
    },
  );

  it('yields the same messages however the byte stream is split', () => {
    const stream = Buffer.concat([
      encodeFrame({ opcode: OPCODE.binary, payload: Buffer.from([0, 1, 2, 3]), mask: true }),
      encodeFrame({ opcode: OPCODE.text, payload: Buffer.alloc(300, 'x'), mask: true }),
      encodeFrame({ opcode: OPCODE.ping, payload: Buffer.from('p'), mask: true }),
    ]);
    const whole = feed(new WebSocketReceiver({ role: 'server' }), stream);
    expect(whole.map((e) => e.type)).toEqual(['message', 'message', 'ping']);
    for (const chunk of [1, 2, 3, 7, 64])
      expect(feed(new WebSocketReceiver({ role: 'server' }), stream, chunk)).toEqual(whole);
  });

  it('reassembles a fragmented message and delivers a ping sent between its fragments first', () => {
    const stream = Buffer.concat([
      encodeFrame({ opcode: OPCODE.text, payload: Buffer.from('frag'), fin: false, mask: true }),
      encodeFrame({ opcode: OPCODE.ping, payload: Buffer.from('mid'), mask: true }),
      encodeFrame({ opcode: OPCODE.continuation, payload: Buffer.from('men'), fin: false, mask: true }),
      encodeFrame({ opcode: OPCODE.continuation, payload: Buffer.from('ted'), mask: true }),
    ]);
    expect(feed(new WebSocketReceiver({ role: 'server' }), stream)).toEqual([
      { type: 'ping', data: Buffer.from('mid') },
      { type: 'message', isBinary: false, data: Buffer.from('fragmented') },
    ]);
  });

  it('reads the status code and reason of a close frame and ignores anything after it', () => {
    const stream = Buffer.concat([
      encodeFrame({ opcode: OPCODE.close, payload: encodeClosePayload(CLOSE_CODE.goingAway, 'bye'), mask: true }),
      encodeFrame({ opcode: OPCODE.binary, payload: Buffer.from('late'), mask: true }),
    ]);
    expect(feed(new WebSocketReceiver({ role: 'server' }), stream)).toEqual([
      { type: 'close', code: 1001, reason: 'bye' },
    ]);
  });

  it.each([
    [
      'an unmasked client frame',
      'server',
      encodeFrame({ opcode: OPCODE.binary, payload: Buffer.from('x') }),
      'WS_ERR_EXPECTED_MASK',
      1002,
    ],
    [
      'a masked server frame',
      'client',
      encodeFrame({ opcode: OPCODE.binary, payload: Buffer.from('x'), mask: MASK }),
      'WS_ERR_UNEXPECTED_MASK',
      1002,
    ],
    ['a reserved bit', 'client', Buffer.from([0xc2, 0x00]), 'WS_ERR_UNEXPECTED_RSV', 1002],
    ['an unknown opcode', 'client', Buffer.from([0x83, 0x00]), 'WS_ERR_INVALID_OPCODE', 1002],
    ['a fragmented ping', 'client', Buffer.from([0x09, 0x00]), 'WS_ERR_INVALID_CONTROL_FRAME', 1002],
    [
      'a 126-byte ping',
      'client',
      encodeFrame({ opcode: OPCODE.ping, payload: Buffer.alloc(126) }),
      'WS_ERR_INVALID_CONTROL_FRAME',
      1002,
    ],
    [
      'a continuation without a message',
      'client',
      encodeFrame({ opcode: OPCODE.continuation, payload: Buffer.from('x') }),
      'WS_ERR_UNEXPECTED_CONTINUATION',
      1002,
    ],
    [
      'a new message inside a fragmented one',
      'client',
      Buffer.concat([
        encodeFrame({ opcode: OPCODE.binary, payload: Buffer.from('a'), fin: false }),
        encodeFrame({ opcode: OPCODE.binary, payload: Buffer.from('b') }),
      ]),
      'WS_ERR_EXPECTED_CONTINUATION',
      1002,
    ],
    [
      'invalid UTF-8 in a text message',
      'client',
      encodeFrame({ opcode: OPCODE.text, payload: Buffer.from([0xc3, 0x28]) }),
      'WS_ERR_INVALID_UTF8',
      1007,
    ],
    [
      'a one-byte close payload',
      'client',
      encodeFrame({ opcode: OPCODE.close, payload: Buffer.from([3]) }),
      'WS_ERR_INVALID_CLOSE_PAYLOAD',
      1002,
    ],
    [
      'the reserved close code 1005 on the wire',
      'client',
      encodeFrame({ opcode: OPCODE.close, payload: encodeClosePayload(1005) }),
      'WS_ERR_INVALID_CLOSE_CODE',
      1002,
    ],
  ] as const)('rejects %s', (_name, role, bytes, code, closeCode) => {
    const error = violation(role, bytes);
    expect(error.code).toBe(code);
    expect(error.closeCode).toBe(closeCode);
  });

  it('rejects a message larger than the limit with 1009, counting all fragments', () => {
    const stream = Buffer.concat([
      encodeFrame({ opcode: OPCODE.binary, payload: Buffer.alloc(60), fin: false }),
      encodeFrame({ opcode: OPCODE.continuation, payload: Buffer.alloc(60) }),
    ]);
    const error = violation('client', stream, 100);
    expect(error.code).toBe('WS_ERR_MESSAGE_TOO_BIG');
    expect(error.closeCode).toBe(CLOSE_CODE.messageTooBig);
  });
});

describe('WebSocket connections', () => {
  function pair(): { server: WebSocketConnection; client: WebSocketConnection } {
    const [a, b] = duplexPair();
    return {
      server: new WebSocketConnection(a, Buffer.alloc(0), { role: 'server', protocol: 'v5.channel.k8s.io' }),
      client: new WebSocketConnection(b, Buffer.alloc(0), { role: 'client', protocol: 'v5.channel.k8s.io' }),
    };
  }

  it('carries messages both ways and answers pings with pongs', async () => {
    const { server, client } = pair();
    const atServer = once(server, 'message');
    client.send(Buffer.from('from client'));
    expect((await atServer)[0]).toEqual(Buffer.from('from client'));
    const atClient = once(client, 'message');
    server.send(Buffer.from('from server'), false);
    expect(await atClient).toEqual([Buffer.from('from server'), false]);
    const pong = once(client, 'pong');
    client.ping(Buffer.from('beat'));
    expect((await pong)[0]).toEqual(Buffer.from('beat'));
    client.terminate();
  });

  it("completes the closing handshake: both sides see the initiator's code", async () => {
    const { server, client } = pair();
    const serverClosed = once(server, 'close');
    const clientClosed = once(client, 'close');
    client.close(CLOSE_CODE.normal, 'done');
    expect(await serverClosed).toEqual([1000, 'done']);
    expect((await clientClosed)[0]).toBe(1000);
    expect(server.isOpen).toBe(false);
    expect(client.send(Buffer.from('too late'))).toBe(false);
  });

  it('answers a protocol violation with a close frame carrying its close code', async () => {
    const [a, b] = duplexPair();
    const server = new WebSocketConnection(a, Buffer.alloc(0), { role: 'server', protocol: '' });
    const closed = once(server, 'close');
    const received: Buffer[] = [];
    b.on('data', (chunk: Buffer) => received.push(chunk));
    b.write(encodeFrame({ opcode: OPCODE.binary, payload: Buffer.from('unmasked') }));
    expect((await closed)[0]).toBe(CLOSE_CODE.protocolError);
    const events = new WebSocketReceiver({ role: 'client' }).push(Buffer.concat(received));
    expect(events[0]).toMatchObject({ type: 'close', code: 1002 });
  });
});
