import { describe, expect, it } from 'vitest';
import { forwardHeaders, responseHeaders, upgradeResponseHead } from '../../../src/edge/forward-headers.js';

describe('forwardHeaders', () => {
  const client = {
    host: 'edge-proxy:10261',
    connection: 'keep-alive, Upgrade',
    'keep-alive': 'timeout=5',
    'proxy-authorization': 'Basic x',
    te: 'trailers',
    'transfer-encoding': 'chunked',
    upgrade: 'SPDY/3.1',
    authorization: 'Bearer t',
    accept: 'application/json',
    'impersonate-user': 'alice',
  };

  it('drops hop-by-hop and proxy headers and keeps the rest, the credentials included', () => {
    expect(forwardHeaders(client, undefined, false)).toEqual({
      authorization: 'Bearer t',
      accept: 'application/json',
      'impersonate-user': 'alice',
    });
  });

  it('drops the Authorization of a request that goes upstream with a mapped client certificate', () => {
    expect(forwardHeaders(client, 'system:node:edge-1', false)).not.toHaveProperty('authorization');
  });

  it('keeps an upgrade an upgrade', () => {
    expect(forwardHeaders(client, undefined, true)).toMatchObject({ connection: 'Upgrade', upgrade: 'SPDY/3.1' });
  });
});

describe('responseHeaders and upgradeResponseHead', () => {
  it('pass the answer without its hop-by-hop headers', () => {
    expect(
      responseHeaders({ 'content-type': 'application/json', connection: 'close', 'transfer-encoding': 'chunked' }),
    ).toEqual({ 'content-type': 'application/json' });
  });

  it('pass a switch whole, and a refused upgrade without hop-by-hop headers and with Connection: close', () => {
    const raw = ['Upgrade', 'SPDY/3.1', 'Connection', 'Upgrade', 'X-Stream-Protocol-Version', 'v4.channel.k8s.io'];
    expect(upgradeResponseHead(101, 'Switching Protocols', raw, true)).toBe(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nConnection: Upgrade\r\n' +
        'X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n',
    );
    expect(upgradeResponseHead(403, 'Forbidden', ['Content-Type', 'application/json', ...raw], false)).toBe(
      'HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n' +
        'X-Stream-Protocol-Version: v4.channel.k8s.io\r\nConnection: close\r\n\r\n',
    );
  });
});
