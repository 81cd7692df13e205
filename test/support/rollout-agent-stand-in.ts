/**
 * A stand-in for the agent's end of a tunnel, for tests of the hub's side
 * of rollouts: it dials the hub with a cluster's client certificate (ALPN
 * edgeadm-tunnel/1), serves HTTP/2 on the socket as the agent does,
 * answers the handshake, and answers the rollout control paths of
 * src/rollout/wire.ts: it records every copy and removal it is sent
 * (answering 202) and lets the test write report lines. It applies
 * nothing: it is not the agent (src/tunnel/agent.ts with CopyApplier is),
 * only what the hub must talk to.
 *
 * It can also answer as agents that do not serve rollouts: 404 for an
 * unknown control path, or as this version's agent before rollouts, which
 * takes a stream without identity for a user's request and answers 400
 * with a Status (src/tunnel/upstream.ts).
 */
import { once } from 'node:events';
import { constants, performServerHandshake, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { connect as tlsConnect, createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { silentLogger } from '../../src/log/run-log.js';
import { createCa, issueCertificate } from '../../src/trust/pki.js';
import { acceptTunnel, type HubTunnel } from '../../src/tunnel/hub-tunnel.js';
import { TUNNEL_ALPN_PROTOCOL } from '../../src/tunnel/limits.js';
import { HELLO_PATH, WELCOME_PATH } from '../../src/tunnel/protocol.js';
import {
  ROLLOUT_APPLY_PATH,
  ROLLOUT_REMOVE_PATH,
  ROLLOUT_REPORTS_PATH,
  type CopyMessage,
  type RemoveMessage,
  type ReportMessage,
} from '../../src/rollout/wire.js';

/** How the stand-in answers the rollout paths. */
export type StandInKind = 'rollouts' | 'unknown-path-404' | 'before-rollouts-400';

/** Options of {@link connectRolloutStandIn}. */
export interface RolloutStandInOptions {
  port: number;
  caPem: string;
  certPem: string;
  keyPem: string;
  cluster: string;
  kind?: StandInKind;
  /** Called for each copy received (after it is recorded, before the 202). */
  onCopy?: (message: CopyMessage) => void;
  /**
   * How the first report streams are answered before one is served: `503`
   * as the agent answers a control stream it is not ready for, `reset` as a
   * stream that breaks before its answer.
   */
  refuseReports?: Array<'503' | 'reset'>;
  /** Given every other control stream first: true when it answered it (the health stream, say). */
  onControl?: (path: string, stream: ServerHttp2Stream) => boolean;
}

/** A connected stand-in agent. */
export interface RolloutStandIn {
  copies: CopyMessage[];
  removals: RemoveMessage[];
  /** Headers of every control stream the hub opened after the handshake. */
  controlHeaders: IncomingHttpHeaders[];
  /** Writes raw bytes to the open report stream. */
  writeRaw(text: string): void;
  /** Writes one report line. */
  report(message: ReportMessage): void;
  /** Ends the open report stream, as the agent does when a newer one arrives. */
  endReports(): void;
  /** Resolves when the hub has opened the report stream. */
  reportsOpened: Promise<void>;
  /** The acknowledgements the hub wrote on the report streams, in order. */
  acks: number[];
  /** Resolves once the hub has acknowledged a line numbered `seq` or later. */
  waitForAck(seq: number): Promise<void>;
  /** How many report streams the hub has opened, refused ones included. */
  reportOpens: number;
  /** Resolves once the hub has opened `count` report streams in all. */
  waitForReportOpens(count: number): Promise<void>;
  /**
   * Resolves when the report stream closes, with the HTTP/2 code it was
   * reset with (CANCEL when the hub closed it, anything else when the
   * connection went from under it).
   */
  reportsClosed: Promise<number>;
  /** Resolves when the hub has welcomed the agent. */
  welcomed: Promise<void>;
  /** Resolves once `count` copies have been received in all. */
  waitForCopies(count: number): Promise<CopyMessage[]>;
  /** Resolves once `count` removals have been received in all. */
  waitForRemovals(count: number): Promise<RemoveMessage[]>;
  /** Resolves when the tunnel is gone. */
  closed: Promise<void>;
  close(): void;
}

function readAll(stream: ServerHttp2Stream): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

/** Dials the hub at 127.0.0.1:`port` as `cluster`'s agent. */
export async function connectRolloutStandIn(options: RolloutStandInOptions): Promise<RolloutStandIn> {
  const kind = options.kind ?? 'rollouts';
  let openReports!: () => void;
  let closeReports!: (code: number) => void;
  let welcome!: () => void;
  let reportStream: ServerHttp2Stream | undefined;
  /** Woken at every copy or removal received. */
  const waiters: (() => void)[] = [];
  const received = async (count: () => number, wanted: number): Promise<void> => {
    while (count() < wanted) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  const socket = tlsConnect({
    host: '127.0.0.1',
    port: options.port,
    ca: options.caPem,
    cert: options.certPem,
    key: options.keyPem,
    ALPNProtocols: [TUNNEL_ALPN_PROTOCOL],
  });
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const agent: RolloutStandIn = {
    copies: [],
    removals: [],
    controlHeaders: [],
    writeRaw: (text) => reportStream?.write(text),
    report: (message) => reportStream?.write(`${JSON.stringify(message)}\n`),
    endReports: () => reportStream?.end(),
    reportsOpened: new Promise((resolve) => (openReports = resolve)),
    reportOpens: 0,
    acks: [],
    waitForAck: (seq) => received(() => (agent.acks.some((ack) => ack >= seq) ? 1 : 0), 1),
    waitForReportOpens: (count) => received(() => agent.reportOpens, count),
    reportsClosed: new Promise((resolve) => (closeReports = resolve)),
    welcomed: new Promise((resolve) => (welcome = resolve)),
    waitForCopies: async (count) => {
      await received(() => agent.copies.length, count);
      return agent.copies;
    },
    waitForRemovals: async (count) => {
      await received(() => agent.removals.length, count);
      return agent.removals;
    },
    closed,
    close: () => socket.destroy(),
  };
  await once(socket, 'secureConnect');
  const session = performServerHandshake(socket);
  session.on('error', () => {});
  session.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    stream.on('error', () => {});
    const path = headers[':path'];
    if (path === HELLO_PATH) {
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      stream.end(JSON.stringify({ cluster: options.cluster }));
      return;
    }
    if (path === WELCOME_PATH) {
      stream.resume();
      stream.respond({ ':status': 204 });
      stream.end();
      welcome();
      return;
    }
    agent.controlHeaders.push(headers);
    if (options.onControl?.(String(path), stream) === true) return;
    if (kind === 'unknown-path-404') {
      stream.resume();
      stream.respond({ ':status': 404 });
      stream.end();
    } else if (kind === 'before-rollouts-400') {
      stream.resume();
      stream.respond({ ':status': 400, 'content-type': 'application/json' });
      stream.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: 'the tunnel stream carries no identity to impersonate',
          reason: 'BadRequest',
          code: 400,
        }),
      );
    } else if (path === ROLLOUT_REPORTS_PATH) {
      agent.reportOpens += 1;
      for (const wake of waiters.splice(0)) wake();
      const refusal = options.refuseReports?.shift();
      if (refusal === '503') {
        stream.respond({ ':status': 503 }, { endStream: true });
        return;
      }
      if (refusal === 'reset') {
        stream.close(constants.NGHTTP2_INTERNAL_ERROR);
        return;
      }
      stream.respond({ ':status': 200, 'content-type': 'application/x-ndjson' });
      reportStream = stream;
      let pending = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const lines = (pending + chunk).split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) agent.acks.push((JSON.parse(line) as { ack: number }).ack);
        for (const wake of waiters.splice(0)) wake();
      });
      stream.once('close', () => closeReports(stream.rstCode));
      openReports();
    } else if (path === ROLLOUT_APPLY_PATH || path === ROLLOUT_REMOVE_PATH) {
      void readAll(stream).then((body) => {
        if (path === ROLLOUT_APPLY_PATH) {
          const message = JSON.parse(body) as CopyMessage;
          agent.copies.push(message);
          options.onCopy?.(message);
        } else {
          agent.removals.push(JSON.parse(body) as RemoveMessage);
        }
        for (const wake of waiters.splice(0)) wake();
        stream.respond({ ':status': 202 });
        stream.end();
      });
    } else {
      stream.resume();
      stream.respond({ ':status': 404 });
      stream.end();
    }
  });
  return agent;
}

/**
 * A hub end (edgeadm's real `acceptTunnel`, on a TLS server with its own CA)
 * and a stand-in agent for cluster `c1`, connected. `close` ends both.
 */
export async function connectStandInPair(
  options: Omit<RolloutStandInOptions, 'port' | 'caPem' | 'certPem' | 'keyPem' | 'cluster'> = {},
): Promise<{ tunnel: HubTunnel; agent: RolloutStandIn; close: () => void }> {
  const ca = await createCa({ commonName: 'test hub CA' });
  const serving = await issueCertificate({ ca, commonName: 'hub', ipAddresses: ['127.0.0.1'], usages: ['server'] });
  const client = await issueCertificate({ ca, commonName: 'c1', usages: ['client'] });
  const server = createTlsServer({
    cert: serving.certPem,
    key: serving.keyPem,
    ca: ca.certPem,
    requestCert: true,
    ALPNProtocols: [TUNNEL_ALPN_PROTOCOL],
  });
  const accepted = new Promise<HubTunnel>((resolve, reject) => {
    server.on('secureConnection', (socket: TLSSocket) => {
      acceptTunnel({ socket, authorize: async () => ({ cluster: 'c1' }), logger: silentLogger }).then(resolve, reject);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const agent = await connectRolloutStandIn({
    ...options,
    port: (server.address() as { port: number }).port,
    caPem: ca.certPem,
    certPem: client.certPem,
    keyPem: client.keyPem,
    cluster: 'c1',
  });
  const tunnel = await accepted;
  return {
    tunnel,
    agent,
    close: () => {
      tunnel.destroy();
      agent.close();
      server.close();
    },
  };
}
