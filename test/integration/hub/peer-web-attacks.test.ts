/**
 * The hub's newer listeners, attacked as an adversary would: the web view's
 * API (`/ui/api/…`) and the replica-to-replica peer path
 * (`/hub/peer/v1/…`). Two hub replicas run in this process on the SIMULATED
 * in-memory coordination of test/support (the peer link does not depend on
 * the store: it is the same over etcd), with short socket deadlines
 * injected; one edge cluster's tunnel (edgeadm's own agent, in process) is
 * held by replica B, its API server the SIMULATED one of test/support, which
 * records every request it is sent.
 *
 * - Bodies: huge ones, declared or chunked, from anyone, must not be read
 *   past the view's bound.
 * - Slow heads and silent sockets on either path, also with a replica
 *   certificate: each closed by the hub once its deadline passes (no test
 *   asserts a duration: each waits for the 'close' event, with a safety
 *   net).
 * - Who may use the peer path (only a replica certificate of this hub's CA),
 *   what a replica certificate gets elsewhere (nothing), and where a path
 *   trick may reach (nowhere but the named cluster, and never a second hop).
 * - A differential test: a request sent through replica A, which forwards
 *   it to B, must reach the edge API server as the same request sent to B
 *   directly: path, query, method, body, headers and the impersonated user.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type RunningHub } from '../../../src/hub/server/hub-server.js';
import { ensureHubPki, type HubPki } from '../../../src/hub/identity/hub-pki.js';
import {
  issueReplicaCredentials,
  PEER_GROUPS_HEADER,
  PEER_USER_HEADER,
  REPLICA_CERT_ORGANIZATION,
  replicaCommonName,
  type PeerCredentials,
} from '../../../src/hub/replicas/peer-link.js';
import {
  MAX_EVENT_STREAMS_PER_SESSION,
  MAX_EVENT_STREAMS_PER_USER,
  MAX_WEB_BODY_BYTES,
} from '../../../src/hub/web/limits.js';
import { silentLogger } from '../../../src/log/run-log.js';
import { registerCluster } from '../../../src/registration/registration.js';
import type { AgentState } from '../../../src/registration/agent-state.js';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';
import { connectTunnel } from '../../../src/tunnel/agent.js';
import { readUpstreamKubeconfig, Upstream } from '../../../src/tunnel/upstream.js';
import { call, type HttpTarget } from '../../support/https-client.js';
import { InMemoryReplicaSet } from '../../support/in-memory-replicas.js';
import { CLOSE_WAIT_MS, SHORT_HUB_DEADLINES } from '../../support/short-hub-deadlines.js';
import { connectWebSocket, startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';
import { ensureWebBuilt, signInDirect } from '../../support/web-view.js';

/** A body far larger than anything the view takes, than the refused-body bound, and than the socket buffers between the two ends. */
const HUGE_BODY_BYTES = 64 * 1024 * 1024;

/** What a raw request came back with. */
interface RawOutcome {
  /** Everything the hub sent, as text. */
  answer: string;
  /** Body bytes the hub took (written into the socket) before it closed the connection. */
  written: number;
  isClosed: boolean;
}

/** Every socket a test opened: destroyed after each test. */
const opened = new Set<{ destroy(): void }>();

describe('hub replicas: the web view and the peer path under attack', { timeout: 120_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'hub-peer-web-'));
  const dataDir = join(root, 'hub');
  let set: InMemoryReplicaSet;
  let a: RunningHub;
  let b: RunningHub;
  let caPem: string;
  let pki: HubPki;
  let adminToken: string;
  /** A user in system:masters on every cluster, and one limited to env=prod. */
  let opsToken: string;
  let prodToken: string;
  let sim: SimApiServer;
  let upstream: Upstream;
  let kubeconfig: string;
  const tunnels: { drain(): Promise<void> }[] = [];
  let site: AgentState;
  let replicaCert: PeerCredentials;

  const at = (hub: RunningHub): HttpTarget => ({ url: `https://127.0.0.1:${hub.port}`, caPem });
  const register = async (cluster: string, labels: Record<string, string>): Promise<AgentState> => {
    const { json } = await call(at(b), {
      method: 'POST',
      path: '/hub/v1/tokens',
      token: adminToken,
      body: { ttlMs: 600_000 },
    });
    const { state } = await registerCluster({
      hub: `127.0.0.1:${b.port}`,
      token: (json as { token: string }).token,
      caCertHashes: [b.caPin],
      cluster,
      labels,
      kubeconfig,
      createServiceAccount: false,
      dataDir: join(root, cluster),
      discoveryTimeout: 30_000,
      logger: silentLogger,
    });
    return state;
  };
  const connect = async (cluster: string, state: AgentState): Promise<void> => {
    tunnels.push(
      await connectTunnel({
        hubServer: `https://127.0.0.1:${b.port}`,
        hubCaPem: state.hubCaPem,
        identity: () => ({ cluster, certPem: state.certPem, keyPem: state.keyPem }),
        upstream,
        logger: silentLogger,
      }),
    );
    while (set.holderOf(cluster) !== 'b') await new Promise((resolve) => setTimeout(resolve, 20));
  };
  const newUser = async (name: string, clustersSelector: string): Promise<string> => {
    const { json } = await call(at(a), {
      method: 'POST',
      path: '/hub/v1/users',
      token: adminToken,
      body: { name, clustersSelector, groups: ['system:masters'] },
    });
    return (json as { token: string }).token;
  };

  /** A TLS connection to `hub`, with a client certificate when given. */
  const tlsOpen = (hub: RunningHub, cert?: { certPem: string; keyPem: string }): Promise<TLSSocket> =>
    new Promise((resolve, reject) => {
      const socket = tlsConnect(
        {
          host: '127.0.0.1',
          port: hub.port,
          ca: caPem,
          ALPNProtocols: ['http/1.1'],
          ...(cert === undefined ? {} : { cert: cert.certPem, key: cert.keyPem }),
        },
        () => resolve(socket),
      );
      opened.add(socket);
      socket.once('error', reject);
    });

  /** Whether the hub closes `socket` (within the safety net), reading and keeping what it sends. */
  const closure = (socket: TLSSocket): Promise<{ outcome: 'closed' | 'open'; answer: string }> =>
    new Promise((resolve) => {
      let answer = '';
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
      socket.on('error', () => undefined);
      const timer = setTimeout(() => resolve({ outcome: 'open', answer }), CLOSE_WAIT_MS);
      socket.once('close', () => {
        clearTimeout(timer);
        resolve({ outcome: 'closed', answer });
      });
    });

  /** Writes `head`, then a body of `total` bytes in chunked encoding (unless the head declares a length), as fast as the hub takes it. */
  const rawRequest = async (
    hub: RunningHub,
    head: string,
    total: number,
    cert?: { certPem: string; keyPem: string },
  ): Promise<RawOutcome> => {
    const socket = await tlsOpen(hub, cert);
    const isChunked = /transfer-encoding: chunked/i.test(head);
    const piece = Buffer.alloc(Math.max(1, Math.min(total, 64 * 1024)), 'a');
    const frame = isChunked
      ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')])
      : piece;
    let written = 0;
    const closed = closure(socket);
    socket.write(head);
    const pump = (): void => {
      while (written < total && !socket.destroyed) {
        written += piece.length;
        if (!socket.write(frame)) {
          socket.once('drain', pump);
          return;
        }
      }
      if (isChunked && !socket.destroyed) socket.write('0\r\n\r\n');
    };
    pump();
    const { outcome, answer } = await closed;
    return { answer, written, isClosed: outcome === 'closed' };
  };

  beforeAll(async () => {
    ensureWebBuilt();
    sim = await startSimApiServer({ gitVersion: 'v1.30.4+sim', recordRequests: true });
    kubeconfig = join(root, 'edge.kubeconfig');
    writeFileSync(kubeconfig, sim.kubeconfig(), { mode: 0o600 });
    upstream = new Upstream(await readUpstreamKubeconfig(kubeconfig), silentLogger);
    set = new InMemoryReplicaSet(dataDir);
    const replica = (id: string): Promise<RunningHub> =>
      startHub({
        listen: '127.0.0.1:0',
        dataDir,
        logger: silentLogger,
        openStore: set.opener(),
        replicaId: id,
        deadlines: SHORT_HUB_DEADLINES,
      });
    a = await replica('a');
    b = await replica('b');
    caPem = readFileSync(join(dataDir, 'pki', 'ca.crt'), 'utf8');
    pki = await ensureHubPki({ dataDir, names: [] });
    adminToken = /^token: (\S+)$/m.exec(readFileSync(a.adminConfigPath, 'utf8'))?.[1] ?? '';
    opsToken = await newUser('ops', '');
    prodToken = await newUser('prod-only', 'env=prod');
    site = await register('site', { env: 'dev' });
    await connect('site', site);
    const prod = await register('prod', { env: 'prod' });
    await connect('prod', prod);
    replicaCert = await issueReplicaCredentials(pki, 'intruder');
  });
  afterEach(() => {
    for (const socket of opened) socket.destroy();
    opened.clear();
  });
  afterAll(async () => {
    for (const tunnel of tunnels) await tunnel.drain();
    await a?.close();
    await b?.close();
    await set?.close();
    upstream?.close();
    await sim?.stop();
  });

  describe('the web view API', () => {
    it('reads no more than its bound of a body, declared or chunked, signed in or not, on any route', async () => {
      const session = await signInDirect({ port: a.port, dataDir }, opsToken);
      const origin = `https://127.0.0.1:${a.port}`;
      const heads = [
        // Nobody signed in, a chunked body on a GET the view answers 401.
        `GET /ui/api/fleet HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n`,
        // The sign-in route, a chunked body with a valid token.
        `POST /ui/api/session HTTP/1.1\r\nHost: 127.0.0.1:${a.port}\r\nOrigin: ${origin}\r\nAuthorization: Bearer ${opsToken}\r\nTransfer-Encoding: chunked\r\n\r\n`,
        // Signed in, a declared length on a read.
        `GET /ui/api/clusters HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${session.cookie}\r\nContent-Length: ${HUGE_BODY_BYTES}\r\n\r\n`,
        // A static file of the page.
        `GET /ui/ HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n`,
      ];
      for (const head of heads) {
        const outcome = await rawRequest(a, head, HUGE_BODY_BYTES);
        // The hub closed the connection long before the body's end: it did not read it.
        expect(outcome.isClosed).toBe(true);
        expect(outcome.written).toBeLessThan(HUGE_BODY_BYTES);
        expect(outcome.answer).toMatch(/^HTTP\/1\.1 413 /);
        expect(outcome.answer).toContain('E_WEB_BODY_TOO_LARGE');
      }
      // A body within the bound is still read, and the request answered as before.
      const small = await rawRequest(
        a,
        `GET /ui/api/session HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${session.cookie}\r\nConnection: close\r\nContent-Length: ${MAX_WEB_BODY_BYTES}\r\n\r\n`,
        MAX_WEB_BODY_BYTES,
      );
      expect(small.answer).toMatch(/^HTTP\/1\.1 200 /);
      expect(small.written).toBe(MAX_WEB_BODY_BYTES);
    });

    it('keeps one user, however many sessions they sign in, from holding every live-update stream', async () => {
      const openEvents = (cookie: string): Promise<IncomingMessage> =>
        new Promise((resolve, reject) => {
          const req = httpsRequest(
            { host: '127.0.0.1', port: a.port, path: '/ui/api/events', ca: caPem, agent: false, headers: { cookie } },
            resolve,
          );
          req.on('socket', (socket) => opened.add(socket));
          req.on('error', reject).end();
        });
      const sessions = Math.ceil(MAX_EVENT_STREAMS_PER_USER / MAX_EVENT_STREAMS_PER_SESSION) + 1;
      const cookies: string[] = [];
      for (let i = 0; i < sessions; i += 1)
        cookies.push((await signInDirect({ port: a.port, dataDir }, opsToken)).cookie);
      const statuses: number[] = [];
      for (let i = 0; i < MAX_EVENT_STREAMS_PER_USER; i += 1) {
        const stream = await openEvents(cookies[Math.floor(i / MAX_EVENT_STREAMS_PER_SESSION)]!);
        statuses.push(stream.statusCode ?? 0);
      }
      expect(statuses).toEqual(statuses.map(() => 200));
      // A fresh session of the same user: refused, the user holds their share.
      const past = await openEvents(cookies[sessions - 1]!);
      expect(past.statusCode).toBe(429);
      past.resume();
      // Another user is not: the streams are not all taken.
      const other = await openEvents((await signInDirect({ port: a.port, dataDir }, prodToken)).cookie);
      expect(other.statusCode).toBe(200);
    });
  });

  describe('bodies on the other routes', () => {
    it('reads no more than the refused-body bound of a body nobody reads: health, a 401 of the kube proxy, a 403 of the peer path', async () => {
      const heads = [
        `GET /healthz HTTP/1.1\r\nHost: hub\r\nTransfer-Encoding: chunked\r\n\r\n`,
        `GET /clusters/site/api HTTP/1.1\r\nHost: hub\r\nTransfer-Encoding: chunked\r\n\r\n`,
        `GET /hub/peer/v1/clusters/site/api HTTP/1.1\r\nHost: hub\r\nTransfer-Encoding: chunked\r\n\r\n`,
      ];
      for (const hub of [a, b]) {
        for (const head of heads) {
          const outcome = await rawRequest(hub, head, HUGE_BODY_BYTES);
          expect({ head, isClosed: outcome.isClosed }).toEqual({ head, isClosed: true });
          expect(outcome.written).toBeLessThan(HUGE_BODY_BYTES);
          expect(outcome.answer).toMatch(/^HTTP\/1\.1 (200|401|403) /);
        }
      }
    });
  });

  describe('slow and silent clients', () => {
    it('closes silent, slow-head and half-open connections on both paths, also with a replica certificate, and serves on', async () => {
      const paths = [
        { path: '/ui/api/fleet' },
        { path: '/hub/peer/v1/clusters/site/api/v1/namespaces/default/pods', cert: replicaCert },
      ];
      const attacks: Promise<{ outcome: 'closed' | 'open'; answer: string }>[] = [];
      const slowHeads: Promise<{ outcome: 'closed' | 'open'; answer: string }>[] = [];
      for (const { path, cert } of paths) {
        // Silent after TLS: no request at all.
        attacks.push(closure(await tlsOpen(b, cert)));
        // Many half-open requests at once: a head begun, never finished.
        for (let i = 0; i < 10; i += 1) {
          const socket = await tlsOpen(b, cert);
          attacks.push(closure(socket));
          socket.write(`GET ${path} HTTP/1.1\r\nHost: hub\r\n`);
        }
        // Slowloris: one header line every 100 ms, never the head's end.
        const slow = await tlsOpen(b, cert);
        slowHeads.push(closure(slow));
        slow.write(`GET ${path} HTTP/1.1\r\nHost: hub\r\n`);
        let line = 0;
        const timer = setInterval(() => {
          if (slow.destroyed) clearInterval(timer);
          else slow.write(`X-Line-${(line += 1)}: a\r\n`);
        }, 100);
        slow.once('close', () => clearInterval(timer));
        // A body declared and trickled a byte at a time (a signed-in replica on the peer path).
        const slowBody = await tlsOpen(b, cert);
        attacks.push(closure(slowBody));
        slowBody.write(
          `POST ${path} HTTP/1.1\r\nHost: hub\r\n${PEER_USER_HEADER}: ops\r\n${PEER_GROUPS_HEADER}: []\r\nContent-Length: 100000\r\n\r\n`,
        );
        const bodyTimer = setInterval(() => (slowBody.destroyed ? clearInterval(bodyTimer) : slowBody.write(' ')), 100);
      }
      expect((await Promise.all(attacks)).map((one) => one.outcome)).toEqual(attacks.map(() => 'closed'));
      for (const slow of await Promise.all(slowHeads)) {
        expect(slow.outcome).toBe('closed');
        expect(slow.answer).toMatch(/^HTTP\/1\.1 408 /);
      }
      expect((await call(at(b), { path: '/healthz' })).status).toBe(200);
      const forwarded = await call(at(a), { path: '/clusters/site/api/v1/namespaces/default/pods', token: opsToken });
      expect(forwarded.status).toBe(200);
    });
  });

  describe('who may use the peer path, and what a replica certificate gets', () => {
    const peerPath = '/hub/peer/v1/clusters/site/api/v1/namespaces/default/pods';
    const asserted = { [PEER_USER_HEADER]: 'mallory', [PEER_GROUPS_HEADER]: '["system:masters"]' };
    /** How many requests carrying `marker` reached the edge API server. */
    const reached = (marker: string): number => sim.requests.filter((r) => r.headers['x-probe'] === marker).length;

    it('refuses every credential but a valid replica certificate of this hub, and forwards nothing refused', async () => {
      const agentCert = { certPem: site.certPem, keyPem: site.keyPem };
      // A cluster deleted: its certificate is revoked.
      const doomed = await register('doomed', { env: 'dev' });
      expect((await call(at(a), { method: 'DELETE', path: '/hub/v1/clusters/doomed', token: adminToken })).status).toBe(
        200,
      );
      // A replica certificate in every respect, from another CA.
      const otherCa = await createCa({ commonName: 'not the hub' });
      const foreign = await issueCertificate({
        ca: otherCa,
        commonName: replicaCommonName('foreign'),
        organizations: [REPLICA_CERT_ORGANIZATION],
        usages: ['client'],
      });
      // The hub's CA, a replica's names, long expired.
      const expired = await issueCertificate({
        ca: pki.ca,
        commonName: replicaCommonName('old'),
        organizations: [REPLICA_CERT_ORGANIZATION],
        usages: ['client'],
        validityDays: 1,
        now: new Date(Date.now() - 30 * 24 * 3600_000),
      });
      // The hub's CA and a replica's CN, an agent's organization.
      const agentOrg = await issueCertificate({
        ca: pki.ca,
        commonName: replicaCommonName('mixed'),
        organizations: ['edgeadm:hub:clusters'],
        usages: ['client'],
      });
      const refused: [string, Parameters<typeof call>[1]][] = [
        ['no credentials', { path: peerPath }],
        ['an operator token', { path: peerPath, token: adminToken }],
        ["a cluster's certificate", { path: peerPath, cert: agentCert }],
        ['a revoked cluster certificate', { path: peerPath, cert: { certPem: doomed.certPem, keyPem: doomed.keyPem } }],
        ['a replica certificate of another CA', { path: peerPath, cert: foreign }],
        ['an expired replica certificate', { path: peerPath, cert: expired }],
        ['a replica CN with an agent organization', { path: peerPath, cert: agentOrg }],
      ];
      for (const [who, request] of refused) {
        const marker = `refused-${who}`;
        const answer = await call(at(b), { ...request, headers: { ...asserted, 'x-probe': marker } });
        expect({ who, status: answer.status }).toEqual({ who, status: 403 });
        expect(reached(marker)).toBe(0);
      }
      const allowed = await call(at(b), {
        path: peerPath,
        cert: replicaCert,
        headers: { ...asserted, 'x-probe': 'replica' },
      });
      expect(allowed.status).toBe(200);
      expect(sim.requests.find((r) => r.headers['x-probe'] === 'replica')?.impersonatedUser).toBe('mallory');
    });

    it('gives a replica certificate nothing outside the peer path', async () => {
      const elsewhere: [string, number][] = [
        ['/ui/api/fleet', 401],
        ['/ui/api/clusters/site/nodes', 401],
        ['/hub/v1/clusters', 401],
        ['/clusters/site/api/v1/namespaces/default/pods', 401],
      ];
      for (const [path, status] of elsewhere) {
        const answer = await call(at(b), { path, cert: replicaCert, headers: { ...asserted, 'x-probe': path } });
        expect({ path, status: answer.status }).toEqual({ path, status });
        expect(reached(path)).toBe(0);
      }
      const signIn = await call(at(b), {
        method: 'POST',
        path: '/ui/api/session',
        cert: replicaCert,
        headers: { origin: `https://127.0.0.1:${b.port}`, 'sec-fetch-site': 'same-origin' },
      });
      expect(signIn.status).toBe(401);
      expect(signIn.headers['set-cookie']).toBeUndefined();
    });

    it('reaches only the named cluster, with a well-formed identity, and never forwards a second time', async () => {
      const tricks: [string, number][] = [
        ['/hub/peer/v1/clusters/site/../prod/api/v1/namespaces/default/pods', 400],
        ['/hub/peer/v1/clusters/site/%2e%2e/prod/api/v1/namespaces/default/pods', 400],
        ['/hub/peer/v1/clusters/site/api/v1/%2e%2e/%2e%2e/%2e%2e/prod/api', 400],
        ['/hub/peer/v1/clusters/site//127.0.0.1:1/api', 400],
        ['/hub/peer/v1/clusters/site/\\prod/api', 400],
        ['/hub/peer/v1/clusters/site/api%2f..%2f..%2fprod', 400],
        ['/hub/peer/v1/clusters/site/.edgeadm/hello', 400],
        ['/hub/peer/v1/clusters/site%2fprod/api/v1/pods', 404],
        ['/hub/peer/v1/clusters/SITE/api/v1/pods', 404],
        ['/hub/peer/v1//clusters/site/api/v1/pods', 404],
        ['/hub/peer/v1/clusters/../clusters/prod/api/v1/pods', 404],
        ['/hub/peer/v2/clusters/site/api/v1/pods', 404],
      ];
      for (const [path, status] of tricks) {
        const answer = await call(at(b), { path, cert: replicaCert, headers: { ...asserted, 'x-probe': path } });
        expect({ path, status: answer.status }).toEqual({ path, status });
        expect(reached(path)).toBe(0);
      }
      const identities: Record<string, string>[] = [
        {},
        { [PEER_USER_HEADER]: 'mallory' },
        { [PEER_USER_HEADER]: '', [PEER_GROUPS_HEADER]: '[]' },
        { [PEER_USER_HEADER]: 'a b', [PEER_GROUPS_HEADER]: '[]' },
        { [PEER_USER_HEADER]: 'x'.repeat(300), [PEER_GROUPS_HEADER]: '[]' },
        { [PEER_USER_HEADER]: 'mallory', [PEER_GROUPS_HEADER]: 'system:masters' },
        { [PEER_USER_HEADER]: 'mallory', [PEER_GROUPS_HEADER]: '[{"name":"system:masters"}]' },
        { [PEER_USER_HEADER]: 'mallory', [PEER_GROUPS_HEADER]: '["a,b","system:masters\\u0000"]' },
      ];
      for (const [index, headers] of identities.entries()) {
        const marker = `identity-${index}`;
        const answer = await call(at(b), {
          path: peerPath,
          cert: replicaCert,
          headers: { ...headers, 'x-probe': marker },
        });
        expect({ headers, status: answer.status }).toEqual({ headers, status: 400 });
        expect(reached(marker)).toBe(0);
      }
      // Replica A does not hold the tunnel: a forwarded request there goes no further.
      const secondHop = await call(at(a), {
        path: peerPath,
        cert: replicaCert,
        headers: { ...asserted, 'x-probe': 'second-hop' },
      });
      expect(secondHop.status).toBe(503);
      expect(reached('second-hop')).toBe(0);
      // Through A as an operator: the selector is checked on A, the path by the same rule.
      const prodOnSite = await call(at(a), {
        path: '/clusters/site/api/v1/namespaces/default/pods',
        token: prodToken,
        headers: { 'x-probe': 'prod-on-site' },
      });
      expect(prodOnSite.status).toBe(403);
      const prodEscapes = await call(at(a), {
        path: '/clusters/prod/../site/api/v1/namespaces/default/pods',
        token: prodToken,
        headers: { 'x-probe': 'prod-escapes' },
      });
      expect(prodEscapes.status).toBe(400);
      expect(reached('prod-on-site') + reached('prod-escapes')).toBe(0);
    });
  });

  describe('differential: through replica A as sent to B directly', () => {
    /** What the edge API server saw of one request, without what belongs to one connection. */
    const seenAs = (marker: string): unknown[] =>
      sim.requests
        .filter((r) => r.headers['x-probe'] === marker)
        .map((record) => {
          const headers = { ...record.headers };
          // The agent's own connection to its API server, the same for both.
          delete headers.host;
          delete headers.connection;
          delete headers['x-probe'];
          return {
            method: record.method,
            target: record.target,
            headers,
            user: record.impersonatedUser,
            groups: record.impersonatedGroups,
            status: record.status,
          };
        });

    /** Header names an operator might send: plain, identity claims, hop-by-hop, the peer link's own. */
    const headerName = fc.constantFrom(
      'accept',
      'user-agent',
      'content-type',
      'x-custom',
      'Impersonate-User',
      'Impersonate-Group',
      'impersonate-extra-scopes',
      'X-Remote-User',
      'X-Forwarded-For',
      'authorization',
      'cookie',
      PEER_USER_HEADER,
      PEER_GROUPS_HEADER,
      'edgeadm-impersonate-user',
      'te',
      'keep-alive',
      'accept-encoding',
    );
    const headerValue = fc.stringMatching(/^[A-Za-z0-9:;=,./ -]{1,40}$/).map((value) => value.trim() || 'x');
    const request = fc.record({
      method: fc.constantFrom('GET', 'POST', 'DELETE', 'PATCH'),
      path: fc.constantFrom(
        '/api/v1/namespaces/default/pods',
        '/api/v1/namespaces/default/configmaps',
        '/apis/apps/v1/namespaces/default/deployments',
        '/version',
        '/api/v1/nodes',
      ),
      query: fc.option(
        fc.stringMatching(/^[A-Za-z0-9=&%._~-]{1,60}$/).filter((q) => !/%(?![0-9A-Fa-f]{2})/.test(q)),
        {
          nil: undefined,
        },
      ),
      // A header given twice or more is sent as repeated lines.
      headers: fc.dictionary(headerName, fc.oneof(headerValue, fc.array(headerValue, { minLength: 2, maxLength: 3 })), {
        maxKeys: 6,
      }),
      body: fc.option(fc.json({ maxDepth: 2 }), { nil: undefined }),
      user: fc.constantFrom('ops', 'prod-only'),
    });

    it('opens the same upgraded connection (exec) either way: target, headers, impersonated identity', async () => {
      sim.setObject({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web-0', namespace: 'default' },
        spec: { containers: [{ name: 'web', image: 'nginx' }] },
      });
      const exec = async (hub: RunningHub, marker: string): Promise<void> => {
        const connection = await connectWebSocket({
          url: `https://127.0.0.1:${hub.port}/clusters/site/api/v1/namespaces/default/pods/web-0/exec?command=true&stdout=true`,
          protocols: ['v5.channel.k8s.io', 'v4.channel.k8s.io'],
          headers: {
            Authorization: `Bearer ${opsToken}`,
            'Impersonate-User': 'system:admin',
            [PEER_USER_HEADER]: 'mallory',
            'X-Custom': ['one', 'two'].join(', '),
            'x-probe': marker,
          },
          ca: caPem,
        });
        await new Promise((resolve) => {
          connection.once('close', resolve);
          connection.close();
        });
      };
      // Node's warning of an emitter with too many listeners, which the hub would print at every exec.
      const warnings: string[] = [];
      const onWarning = (warning: Error): void => {
        warnings.push(`${warning.name}: ${warning.message}`);
      };
      process.on('warning', onWarning);
      try {
        await exec(b, 'exec-direct');
        await exec(a, 'exec-forwarded');
        // Warnings are emitted on the next tick.
        await new Promise((resolve) => setImmediate(resolve));
      } finally {
        process.off('warning', onWarning);
      }
      expect(warnings).toEqual([]);
      // The WebSocket key is new on every connection; everything else must be the same.
      const upgradeSeen = (marker: string): unknown[] =>
        seenAs(marker).map((one) => {
          const { headers, ...rest } = one as { headers: Record<string, unknown> };
          const { 'sec-websocket-key': _key, ...kept } = headers;
          return { ...rest, headers: kept };
        });
      const direct = upgradeSeen('exec-direct');
      expect(direct).toHaveLength(1);
      expect(direct[0]).toMatchObject({ user: 'ops', groups: ['system:masters'], status: 101 });
      expect(upgradeSeen('exec-forwarded')).toEqual(direct);
    });

    it('delivers the same method, target, headers, body and impersonated identity either way', async () => {
      const tokens: Record<string, string> = { ops: opsToken, 'prod-only': prodToken };
      let run = 0;
      await fc.assert(
        fc.asyncProperty(request, async (generated) => {
          run += 1;
          const cluster = generated.user === 'prod-only' ? 'prod' : 'site';
          const path = `/clusters/${cluster}${generated.path}${generated.query === undefined ? '' : `?${generated.query}`}`;
          const send = (hub: RunningHub, marker: string) =>
            call(at(hub), {
              method: generated.method,
              path,
              token: tokens[generated.user],
              headers: {
                ...generated.headers,
                'x-probe': marker,
                // Node's client sends a GET's or DELETE's body unframed unless its length is given.
                ...(generated.body === undefined
                  ? {}
                  : { 'content-length': String(Buffer.byteLength(generated.body)) }),
              },
              ...(generated.body === undefined ? {} : { body: generated.body }),
            });
          const direct = await send(b, `direct-${run}`);
          const forwarded = await send(a, `forwarded-${run}`);
          // A read answers the same either way; a change (create, delete) changes what the second one meets.
          if (generated.method === 'GET') {
            expect({ status: forwarded.status, text: forwarded.text }).toEqual({
              status: direct.status,
              text: direct.text,
            });
          }
          const asked = (marker: string): unknown[] =>
            seenAs(marker).map((one) => ({ ...(one as object), status: undefined }));
          const seen = asked(`direct-${run}`);
          expect(asked(`forwarded-${run}`)).toEqual(seen);
          // The identity is the token's, whatever was claimed in headers.
          for (const one of seen) expect(one).toMatchObject({ user: generated.user, groups: ['system:masters'] });
        }),
        { numRuns: 40 },
      );
    });
  });
});
