/**
 * What the node tunnel decides, as pure functions: the CONNECT head the API
 * server sends (kube-apiserver's egressselector, `CONNECT host:port
 * HTTP/1.1`), which way a target goes (a node's tunnel, refused, or direct),
 * and which node a client certificate names.
 *
 * Pure: no I/O.
 */
import { EDGE_NODE_LABEL, KUBELET_PORT } from './limits.js';

/** A `host:port` the API server asked for. */
export interface ConnectTarget {
  /** An address or name, without IPv6 brackets. */
  host: string;
  port: number;
  /** As the API server wrote it. */
  authority: string;
}

/** The outcome of reading a CONNECT head from the bytes received so far. */
export type ConnectHead =
  | { kind: 'incomplete' }
  | { kind: 'invalid'; reason: string }
  | { kind: 'connect'; target: ConnectTarget; rest: Buffer };

const HEAD_END = Buffer.from('\r\n\r\n');
const REQUEST_LINE = /^CONNECT (\S+) HTTP\/1\.[01]$/;
const AUTHORITY = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/;

/** Parses `host:port` (IPv6 in brackets). */
export function parseAuthority(authority: string): ConnectTarget | undefined {
  const match = AUTHORITY.exec(authority);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port < 1 || port > 65535) return undefined;
  return { host: (match[1] ?? match[2]) as string, port, authority };
}

/**
 * Reads the request head of one CONNECT. `rest` is what followed the head
 * (the API server sends nothing before the answer, but it is not lost if it did).
 */
export function parseConnectHead(received: Buffer, maxBytes: number): ConnectHead {
  const end = received.indexOf(HEAD_END);
  if (end < 0) {
    return received.length > maxBytes
      ? { kind: 'invalid', reason: `the request head is longer than ${maxBytes} bytes` }
      : { kind: 'incomplete' };
  }
  if (end > maxBytes) return { kind: 'invalid', reason: `the request head is longer than ${maxBytes} bytes` };
  const requestLine = received.subarray(0, end).toString('latin1').split('\r\n')[0] ?? '';
  const match = REQUEST_LINE.exec(requestLine);
  if (!match) return { kind: 'invalid', reason: 'only CONNECT host:port HTTP/1.1 is served' };
  const target = parseAuthority(match[1] as string);
  if (!target) return { kind: 'invalid', reason: `${JSON.stringify(match[1])} is not host:port` };
  return { kind: 'connect', target, rest: received.subarray(end + HEAD_END.length) };
}

/** What the server knows of one Node. */
export interface KnownNode {
  name: string;
  /** Every address in its status (InternalIP, ExternalIP, Hostname…): the API server may dial any of them. */
  addresses: string[];
  /** The port its kubelet reported (status.daemonEndpoints), else {@link KUBELET_PORT}. */
  kubeletPort: number;
  /** Labelled an edge node: reached only through its tunnel. */
  isEdge: boolean;
}

/** The parts of a Node object the server reads. */
export interface NodeObject {
  metadata?: { name?: string; labels?: Record<string, string> };
  status?: {
    addresses?: Array<{ type?: string; address?: string }>;
    daemonEndpoints?: { kubeletEndpoint?: { Port?: number } };
  };
}

/** A Node object as {@link KnownNode}; undefined without a name. */
export function knownNodeOf(node: NodeObject): KnownNode | undefined {
  const name = node.metadata?.name;
  if (!name) return undefined;
  const addresses = (node.status?.addresses ?? [])
    .map((entry) => entry.address)
    .filter((address): address is string => typeof address === 'string' && address !== '');
  const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port;
  return {
    name,
    addresses: [...new Set(addresses)],
    kubeletPort: typeof port === 'number' && port > 0 ? port : KUBELET_PORT,
    isEdge: node.metadata?.labels?.[EDGE_NODE_LABEL] === 'true',
  };
}

/** Where one CONNECT goes. */
export type Route =
  /** Through the node's tunnel, to its own kubelet. */
  | { kind: 'tunnel'; node: string }
  /** The node is reached only through its tunnel, and it has none now. */
  | { kind: 'offline'; node: string }
  /** Refused: the reason goes back to the API server. */
  | { kind: 'refused'; reason: string }
  /** No edge node's address: the control plane's own network, as without the egress selector. */
  | { kind: 'direct' };

/**
 * Decides where a CONNECT goes. A node with a tunnel (or labelled edge) is
 * reached only at its kubelet's port and only through its own tunnel; an
 * address two nodes claim (a node sets its own addresses) is refused if
 * either is such a node, so that no node can draw another's connections.
 */
export function routeOf(
  target: ConnectTarget,
  nodes: readonly KnownNode[],
  hasTunnel: (node: string) => boolean,
): Route {
  const claiming = nodes.filter((node) => node.addresses.includes(target.host));
  const tunnelled = claiming.filter((node) => node.isEdge || hasTunnel(node.name));
  if (tunnelled.length === 0) return { kind: 'direct' };
  if (claiming.length > 1) {
    return {
      kind: 'refused',
      reason: `the address ${target.host} is claimed by several nodes (${claiming.map((node) => node.name).join(', ')})`,
    };
  }
  const node = tunnelled[0] as KnownNode;
  if (target.port !== node.kubeletPort) {
    return {
      kind: 'refused',
      reason: `edge node ${node.name} is reached only at its kubelet port ${node.kubeletPort}, not ${target.port}`,
    };
  }
  return hasTunnel(node.name) ? { kind: 'tunnel', node: node.name } : { kind: 'offline', node: node.name };
}

/** The kubelet client certificates' subject: `CN=system:node:NAME, O=system:nodes`. */
const NODE_CN = /^system:node:([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)$/;

/** The subject fields of a peer certificate, as node:tls gives them. */
export interface CertificateSubject {
  CN?: string | string[];
  O?: string | string[];
}

/** The node a kubelet client certificate names, or why it names none. */
export function nodeOfSubject(subject: CertificateSubject | undefined): { node: string } | { refusal: string } {
  const cn = subject?.CN;
  const organizations = subject?.O === undefined ? [] : Array.isArray(subject.O) ? subject.O : [subject.O];
  const match = typeof cn === 'string' ? NODE_CN.exec(cn) : null;
  if (!match || !organizations.includes('system:nodes')) {
    return {
      refusal: 'the client certificate is not a kubelet client certificate (CN=system:node:NAME, O=system:nodes)',
    };
  }
  return { node: match[1] as string };
}
