import { describe, expect, it } from 'vitest';
import {
  knownNodeOf,
  nodeOfSubject,
  parseConnectHead,
  routeOf,
  type ConnectTarget,
  type KnownNode,
} from '../../../src/node-tunnel/routing.js';

const head = (text: string): Buffer => Buffer.from(text, 'latin1');
const target = (authority: string): ConnectTarget => {
  const parsed = parseConnectHead(head(`CONNECT ${authority} HTTP/1.1\r\n\r\n`), 8192);
  if (parsed.kind !== 'connect') throw new Error(`not parsed: ${authority}`);
  return parsed.target;
};

describe('parseConnectHead', () => {
  it('reads the request kube-apiserver writes, and keeps what follows the head', () => {
    const parsed = parseConnectHead(head('CONNECT 10.0.0.7:10250 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n\x16\x03'), 8192);
    expect(parsed).toEqual({
      kind: 'connect',
      target: { host: '10.0.0.7', port: 10250, authority: '10.0.0.7:10250' },
      rest: Buffer.from('\x16\x03', 'latin1'),
    });
  });

  it('waits for the rest of a head that has not ended', () => {
    expect(parseConnectHead(head('CONNECT 10.0.0.7:10250 HTTP/1.1\r\nHost: 1'), 8192)).toEqual({ kind: 'incomplete' });
  });

  it('reads IPv6 targets in brackets', () => {
    expect(target('[fd00::7]:10250')).toMatchObject({ host: 'fd00::7', port: 10250 });
  });

  it('refuses other methods, targets without a port, and heads past the bound', () => {
    expect(parseConnectHead(head('GET / HTTP/1.1\r\n\r\n'), 8192)).toMatchObject({ kind: 'invalid' });
    expect(parseConnectHead(head('CONNECT 10.0.0.7 HTTP/1.1\r\n\r\n'), 8192)).toMatchObject({ kind: 'invalid' });
    expect(parseConnectHead(head('CONNECT 10.0.0.7:99999 HTTP/1.1\r\n\r\n'), 8192)).toMatchObject({ kind: 'invalid' });
    expect(parseConnectHead(Buffer.alloc(9000, 0x41), 8192)).toMatchObject({ kind: 'invalid' });
  });
});

const edge1: KnownNode = { name: 'edge-1', addresses: ['10.0.0.7'], kubeletPort: 10250, isEdge: true };
const edge2: KnownNode = { name: 'edge-2', addresses: ['10.0.0.8'], kubeletPort: 10250, isEdge: true };
const cloud: KnownNode = { name: 'cp', addresses: ['10.0.0.1'], kubeletPort: 10250, isEdge: false };
const connected =
  (...names: string[]) =>
  (node: string) =>
    names.includes(node);

describe('routeOf', () => {
  it("sends an edge node's kubelet through that node's tunnel", () => {
    expect(routeOf(target('10.0.0.8:10250'), [edge1, edge2, cloud], connected('edge-1', 'edge-2'))).toEqual({
      kind: 'tunnel',
      node: 'edge-2',
    });
  });

  it('answers offline for an edge node without a tunnel, never dialling it directly', () => {
    expect(routeOf(target('10.0.0.7:10250'), [edge1, edge2], connected('edge-2'))).toEqual({
      kind: 'offline',
      node: 'edge-1',
    });
  });

  it('reaches an edge node at its kubelet port only', () => {
    expect(routeOf(target('10.0.0.7:22'), [edge1], connected('edge-1'))).toMatchObject({ kind: 'refused' });
  });

  it('refuses an address a node claims beside an edge node, so no node draws another one’s connections', () => {
    const thief: KnownNode = { name: 'thief', addresses: ['10.0.0.7'], kubeletPort: 10250, isEdge: true };
    expect(routeOf(target('10.0.0.7:10250'), [edge1, thief], connected('edge-1', 'thief'))).toMatchObject({
      kind: 'refused',
      reason: expect.stringContaining('edge-1, thief'),
    });
  });

  it('dials other nodes and other addresses directly, as the API server would without the selector', () => {
    expect(routeOf(target('10.0.0.1:10250'), [edge1, cloud], connected('edge-1'))).toEqual({ kind: 'direct' });
    expect(routeOf(target('10.96.0.10:443'), [edge1, cloud], connected('edge-1'))).toEqual({ kind: 'direct' });
  });

  it('routes a node with a live tunnel through it even before it is labelled an edge node', () => {
    const fresh = { ...edge1, isEdge: false };
    expect(routeOf(target('10.0.0.7:10250'), [fresh], connected('edge-1'))).toEqual({ kind: 'tunnel', node: 'edge-1' });
  });
});

describe('knownNodeOf', () => {
  it("takes every address, the kubelet's reported port and the edge label", () => {
    expect(
      knownNodeOf({
        metadata: { name: 'edge-1', labels: { 'edgeadm.io/edge': 'true' } },
        status: {
          addresses: [
            { type: 'InternalIP', address: '10.0.0.7' },
            { type: 'Hostname', address: 'edge-1' },
          ],
          daemonEndpoints: { kubeletEndpoint: { Port: 10255 } },
        },
      }),
    ).toEqual({ name: 'edge-1', addresses: ['10.0.0.7', 'edge-1'], kubeletPort: 10255, isEdge: true });
  });
});

describe('nodeOfSubject', () => {
  it('names the node of a kubelet client certificate', () => {
    expect(nodeOfSubject({ CN: 'system:node:edge-1', O: 'system:nodes' })).toEqual({ node: 'edge-1' });
  });

  it('refuses certificates that are not a node’s: no node group, another CN, or several CNs', () => {
    expect(nodeOfSubject({ CN: 'system:node:edge-1' })).toHaveProperty('refusal');
    expect(nodeOfSubject({ CN: 'kubernetes-admin', O: ['system:nodes'] })).toHaveProperty('refusal');
    expect(nodeOfSubject({ CN: ['system:node:a', 'system:node:b'], O: 'system:nodes' })).toHaveProperty('refusal');
    expect(nodeOfSubject(undefined)).toHaveProperty('refusal');
  });
});
