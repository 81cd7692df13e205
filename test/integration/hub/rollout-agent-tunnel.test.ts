/**
 * Rollout copies through the real tunnel agent: edgeadm's `connectTunnel`
 * with a CopyAgent's control routes and a real Upstream to the SIMULATED API
 * server (test/support/sim-apiserver and its simulated workload
 * controllers), and a stand-in for the hub's end (TLS with the hub CA, the
 * hub's HTTP/2 client role, its hello and welcome) that sends copies and
 * reads the report stream as the hub does. The hub's own rollout controller
 * is not here; this is the wire contract of src/rollout/wire.ts end to end.
 */
import { once } from 'node:events';
import { connect as http2Connect, type ClientHttp2Session } from 'node:http2';
import { createServer, type Server, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log/run-log.js';
import { kubeCredentialsOf } from '../../../src/registration/agent-service.js';
import { CopyAgent } from '../../../src/rollout/copy-agent.js';
import { ROLLOUT_APPLY_PATH, ROLLOUT_REPORTS_PATH } from '../../../src/rollout/wire.js';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';
import { connectTunnel, type AgentConnection } from '../../../src/tunnel/agent.js';
import { TUNNEL_ALPN_PROTOCOL } from '../../../src/tunnel/limits.js';
import { HELLO_PATH, identityHeaders, WELCOME_PATH } from '../../../src/tunnel/protocol.js';
import { Upstream } from '../../../src/tunnel/upstream.js';
import {
  ReportReader,
  agentCredentials,
  copyMessage,
  copyOf,
  exchange,
  postCopy,
  postRemove,
  readyAt,
  startEdgeCluster,
} from '../../support/rollout-agent-fixture.js';
import type { SimApiServer } from '../../support/sim-apiserver/index.js';
import { rollout } from '../../unit/rollout/fixtures.js';

const CLUSTER_NAME = 'store-042';
let cluster: SimApiServer;
let hubServer: Server;
let hub: ClientHttp2Session;
let connection: AgentConnection;
let rollouts: CopyAgent;
let upstream: Upstream;

beforeAll(async () => {
  cluster = await startEdgeCluster();
  const ca = await createCa({ commonName: 'test hub CA' });
  const serving = await issueCertificate({ ca, commonName: 'hub', ipAddresses: ['127.0.0.1'], usages: ['server'] });
  const client = await issueCertificate({ ca, commonName: CLUSTER_NAME, usages: ['client'] });
  hubServer = createServer({
    cert: serving.certPem,
    key: serving.keyPem,
    ca: ca.certPem,
    requestCert: true,
    ALPNProtocols: [TUNNEL_ALPN_PROTOCOL],
  });
  const welcomed = new Promise<ClientHttp2Session>((resolve) => {
    hubServer.on('secureConnection', (socket: TLSSocket) => {
      const session = http2Connect('http://agent.invalid', { createConnection: () => socket });
      session.on('error', () => {});
      // The hub's handshake: hello, then welcome, both without an identity.
      void exchange(session, { ':method': 'GET', ':path': HELLO_PATH }).then(async () => {
        await exchange(
          session,
          { ':method': 'POST', ':path': WELCOME_PATH },
          JSON.stringify({ cluster: CLUSTER_NAME }),
        );
        resolve(session);
      });
    });
  });
  hubServer.listen(0, '127.0.0.1');
  await once(hubServer, 'listening');

  const credentials = agentCredentials(cluster);
  upstream = new Upstream(
    { server: credentials.server, caPem: credentials.caPem, token: credentials.token, isInsecureSkipTlsVerify: false },
    silentLogger,
  );
  rollouts = new CopyAgent({
    cluster: CLUSTER_NAME,
    credentials: kubeCredentialsOf(upstream.credentials),
    logger: silentLogger,
    pollNotReadyMs: 10,
    pollReadyMs: 100,
  });
  connection = await connectTunnel({
    hubServer: `https://127.0.0.1:${(hubServer.address() as { port: number }).port}`,
    hubCaPem: ca.certPem,
    identity: () => ({ cluster: CLUSTER_NAME, certPem: client.certPem, keyPem: client.keyPem }),
    upstream,
    logger: silentLogger,
    controlRoutes: rollouts.controlRoutes(),
  });
  hub = await welcomed;
});

afterAll(async () => {
  rollouts?.close();
  await connection?.drain();
  hub?.destroy();
  hubServer?.close();
  upstream?.close();
  await cluster?.stop();
});

describe('rollout copies through the tunnel agent', () => {
  it('applies a copy until its Deployment is ready at its revision, prunes what the next drops, and removes it', async () => {
    const reports = new ReportReader(hub);
    const first = copyOf(1);
    expect((await postCopy(hub, copyMessage(first))).status).toBe(202);
    const ready = await reports.next(readyAt(first.revision));
    expect(ready.line).toMatchObject({ cluster: CLUSTER_NAME, rollout: 'web' });
    expect(
      cluster.getObject({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web' }),
    ).toMatchObject({ status: { availableReplicas: 1, observedGeneration: 1 } });
    expect(cluster.getObject({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'site' })).toBeDefined();

    // The second revision drops the ConfigMap: it is pruned.
    const spec = rollout();
    spec.resources = spec.resources.filter((resource) => resource.kind !== 'ConfigMap');
    const second = copyOf(2, spec);
    expect((await postCopy(hub, copyMessage(second))).status).toBe(202);
    await reports.next(readyAt(second.revision), ready.index + 1);
    expect(cluster.getObject({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'site' })).toBe(undefined);
    expect(
      cluster.getObject({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web' })?.metadata
        .annotations?.['edgeadm.io/rollout-revision'],
    ).toBe(second.revision);

    expect((await postRemove(hub)).status).toBe(202);
    const removed = await reports.next((line) => line.kind === 'removed');
    expect(removed.line).toEqual({ kind: 'removed', rollout: 'web', cluster: CLUSTER_NAME });
    expect(cluster.getObject({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web' })).toBe(
      undefined,
    );
    expect(rollouts.running()).toEqual([]);
    reports.close();
  });

  it("treats a user's stream to the rollout paths as an ordinary API request, refused, never as a copy", async () => {
    cluster.clearRequests();
    const user = identityHeaders({ user: 'mallory', groups: ['system:masters'] });
    const forged = await exchange(
      hub,
      { ':method': 'POST', ':path': ROLLOUT_APPLY_PATH, 'content-type': 'application/json', ...user },
      JSON.stringify(copyMessage(copyOf(3))),
    );
    expect(forged.status).not.toBe(202);
    expect(forged.status).toBeGreaterThanOrEqual(400);
    const reportsAsUser = await exchange(hub, { ':method': 'GET', ':path': ROLLOUT_REPORTS_PATH, ...user });
    expect(reportsAsUser.status).toBeGreaterThanOrEqual(400);
    // Both went to the API server as that user's requests, and nothing became a rollout.
    const reached = cluster.requests.filter((r) => r.path.startsWith('/.edgeadm/'));
    expect(reached.map((r) => [r.method, r.path, r.impersonatedUser])).toEqual([
      ['POST', ROLLOUT_APPLY_PATH, 'mallory'],
      ['GET', ROLLOUT_REPORTS_PATH, 'mallory'],
    ]);
    expect(rollouts.running()).toEqual([]);
  });

  it('answers a control message that is not JSON with 400 through the tunnel', async () => {
    const answer = await exchange(hub, { ':method': 'POST', ':path': ROLLOUT_APPLY_PATH }, 'not json');
    expect(answer.status).toBe(400);
    expect(rollouts.running()).toEqual([]);
  });
});
