/**
 * The agent's side of rollouts (src/rollout/copy-agent.ts) against the
 * SIMULATED API server (test/support/sim-apiserver, with its simulated
 * workload controllers), its control routes served by a loopback HTTP/2
 * server in place of the tunnel (the real tunnel is in
 * test/integration/hub/rollout-agent-tunnel.test.ts). Every wait is for a
 * report line or a store event, never for a clock.
 */
import { once } from 'node:events';
import {
  connect,
  createServer,
  type ClientHttp2Session,
  type Http2Server,
  type SecureClientSessionOptions,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { KubeClient } from '../../../src/kube/client.js';
import { silentLogger } from '../../../src/log/run-log.js';
import { CopyAgent, type CopyAgentOptions } from '../../../src/rollout/copy-agent.js';
import { ROLLOUT_REVISION_ANNOTATION } from '../../../src/rollout/render.js';
import { ROLLOUT_APPLY_PATH, type ReportMessage } from '../../../src/rollout/wire.js';
import {
  AGENT_USER,
  CLUSTER,
  MAX_COPY_MESSAGE_BYTES,
  OWNER,
  ReportReader,
  agentCredentials,
  copyMessage,
  copyOf,
  exchange,
  postCopy,
  postRemove,
  readyAt,
  restoreShop,
  startEdgeCluster,
} from '../../support/rollout-agent-fixture.js';
import { UNPULLABLE_IMAGE_REGISTRY, type SimApiServer } from '../../support/sim-apiserver/index.js';
import { rollout } from './fixtures.js';

let cluster: SimApiServer;
let admin: KubeClient;

/** A CopyAgent behind a loopback HTTP/2 server, and the hub's session to it. */
interface Harness {
  agent: CopyAgent;
  session: ClientHttp2Session;
  close(): Promise<void>;
}

const harnesses: Harness[] = [];

async function startAgent(
  sessionOptions: SecureClientSessionOptions = {},
  agentOptions: Partial<CopyAgentOptions> = {},
): Promise<Harness> {
  const agent = new CopyAgent({
    cluster: CLUSTER.name,
    credentials: agentCredentials(cluster),
    logger: silentLogger,
    pollNotReadyMs: 10,
    pollReadyMs: 100,
    applyRetryMs: 10,
    ...agentOptions,
  });
  const routes = agent.controlRoutes();
  const server: Http2Server = createServer();
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    const route = routes.find((r) => r.method === headers[':method'] && r.path === headers[':path']);
    if (route === undefined) stream.respond({ ':status': 404 }, { endStream: true });
    else void route.handle(stream, headers);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const session = connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, sessionOptions);
  session.on('error', () => {});
  const harness: Harness = {
    agent,
    session,
    close: async () => {
      agent.close();
      session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  harnesses.push(harness);
  return harness;
}

/** Every revision the Deployment `shop/web` carried in the store, in order. */
function deploymentRevisions(): string[] {
  return revisionsSeen;
}
let revisionsSeen: string[] = [];

beforeAll(async () => {
  cluster = await startEdgeCluster();
  admin = new KubeClient({
    contextName: 'admin',
    server: cluster.url,
    caPem: cluster.caPem,
    token: cluster.adminToken,
  });
  cluster.store.subscribe((event) => {
    if (event.object.kind !== 'Deployment' || event.type === 'DELETED') return;
    const revision = event.object.metadata.annotations?.[ROLLOUT_REVISION_ANNOTATION];
    if (revision !== undefined && revisionsSeen.at(-1) !== revision) revisionsSeen.push(revision);
  });
});

afterAll(async () => {
  await cluster.stop();
});

beforeEach(() => {
  revisionsSeen = [];
  cluster.clearRequests();
});

afterEach(async () => {
  for (const harness of harnesses.splice(0)) await harness.close();
  // Each test starts from a cluster without the rollout.
  await admin.delete('/api/v1/namespaces/kube-system/configmaps/edgeadm-rollout-web');
  for (const path of [
    '/apis/apps/v1/namespaces/shop/deployments/web',
    '/api/v1/namespaces/shop/configmaps/site',
    '/api/v1/namespaces/shop/configmaps/extra',
  ])
    await admin.delete(path);
  restoreShop(cluster);
});

describe('CopyAgent', () => {
  it('applies a copy as its owner, keeps the inventory as itself, and reports it ready at its revision', async () => {
    const { session } = await startAgent();
    const reports = new ReportReader(session);
    const copy = copyOf(1);
    expect((await postCopy(session, copyMessage(copy))).status).toBe(202);
    const { line } = await reports.next(readyAt(copy.revision));
    expect(line).toMatchObject({ kind: 'copy', rollout: 'web', cluster: CLUSTER.name, revision: copy.revision });
    // The objects' status travels with the report, for the hub's summaries.
    const deployment = (line as Extract<ReportMessage, { kind: 'copy' }>).objects.find((o) => o.kind === 'Deployment');
    expect(deployment).toMatchObject({ name: 'web', namespace: 'shop', status: { availableReplicas: 1 } });

    const writes = cluster.requests.filter((r) => r.method === 'PATCH');
    const objectWrites = writes.filter((r) => r.namespace === 'shop' || r.resource === 'namespaces');
    expect(objectWrites.length).toBeGreaterThanOrEqual(3);
    for (const write of objectWrites) {
      expect(write.user).toBe(AGENT_USER);
      expect(write.impersonatedUser).toBe(OWNER.user);
      expect(write.impersonatedGroups).toEqual(OWNER.groups);
    }
    const inventoryWrites = writes.filter((r) => r.namespace === 'kube-system');
    expect(inventoryWrites.length).toBeGreaterThan(0);
    for (const write of inventoryWrites) {
      expect(write.name).toBe('edgeadm-rollout-web');
      expect(write.impersonatedUser).toBeUndefined();
    }
  });

  it('gives up on a request its API server does not answer at the deadline, retries, and applies once it answers', async () => {
    const { session } = await startAgent({}, { requestDeadlineMs: 200 });
    const reports = new ReportReader(session);
    const copy = copyOf(1);
    cluster.pause();
    try {
      expect((await postCopy(session, copyMessage(copy))).status).toBe(202);
      // Not stuck "applying" behind the hanging request: the agent says why it waits, and tries again.
      await reports.next(
        (line) =>
          line.kind === 'copy' &&
          line.readiness === 'progressing' &&
          line.revision === copy.revision &&
          (line.message ?? '').includes('no complete answer within 200 ms; retrying'),
      );
    } finally {
      cluster.resume();
    }
    await reports.next(readyAt(copy.revision));
  });

  it('writes a report line the hub has not acknowledged again, until it is', async () => {
    const { session } = await startAgent({}, { reportResendMs: 20 });
    const reports = new ReportReader(session, { isAcked: true });
    const copy = copyOf(1);
    expect((await postCopy(session, copyMessage(copy))).status).toBe(202);
    const first = await reports.next(readyAt(copy.revision));
    const { seq: firstSeq, ...firstLine } = first.line;
    expect(firstSeq).toEqual(expect.any(Number));
    // Not acknowledged: the same report comes again, numbered anew.
    const again = await reports.next(readyAt(copy.revision), first.index + 1);
    const { seq: againSeq, ...againLine } = again.line;
    expect(againLine).toEqual(firstLine);
    expect(againSeq).toBeGreaterThan(firstSeq as number);
  });

  it("reports a copy the cluster's RBAC refuses as failed, quoting its revision and the API server's words", async () => {
    const { session, agent } = await startAgent();
    const reports = new ReportReader(session);
    const copy = copyOf(1);
    expect((await postCopy(session, copyMessage(copy, { user: 'mallory', groups: [] }))).status).toBe(202);
    const { line } = await reports.next((l) => l.kind === 'copy' && l.readiness === 'failed');
    expect(line).toMatchObject({ revision: copy.revision });
    const message = (line as { message: string }).message;
    expect(message).toContain(`revision ${copy.revision}`);
    expect(message).toMatch(/forbidden: User "mallory" cannot/);
    expect(agent.running()).toEqual([{ rollout: 'web', revision: copy.revision, state: 'failed' }]);
    // Nothing was written as the owner.
    expect(cluster.getObject({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web' })).toBe(
      undefined,
    );
  });

  it('reports a Deployment that cannot progress as failed at its revision', async () => {
    const { session } = await startAgent();
    const reports = new ReportReader(session);
    const spec = rollout();
    const web = spec.resources[0] as unknown as {
      spec: { template: { spec: { containers: Array<{ image: string }> } } };
    };
    web.spec.template.spec.containers[0]!.image = `${UNPULLABLE_IMAGE_REGISTRY}/web:1`;
    const copy = copyOf(1, spec);
    await postCopy(session, copyMessage(copy));
    const { line } = await reports.next((l) => l.kind === 'copy' && l.readiness === 'failed');
    expect(line).toMatchObject({ revision: copy.revision });
    expect((line as { message: string }).message).toMatch(/Deployment\/web: deployment exceeded its progress deadline/);
  });

  it('applies only the latest of two copies that arrive while the first is still on its way', async () => {
    const { session } = await startAgent();
    const reports = new ReportReader(session);
    const older = copyOf(1);
    const spec = rollout();
    (spec.resources[1] as unknown as { data: Record<string, string> }).data['site'] = 'newer';
    const newer = copyOf(2, spec);
    cluster.pause();
    expect((await postCopy(session, copyMessage(older))).status).toBe(202);
    expect((await postCopy(session, copyMessage(newer))).status).toBe(202);
    cluster.resume();
    await reports.next(readyAt(newer.revision));
    expect(deploymentRevisions()).toEqual([newer.revision]);
    expect(reports.lines.some(readyAt(older.revision))).toBe(false);
  });

  it('applies a copy it already runs again without reporting it progressing meanwhile', async () => {
    const { session } = await startAgent();
    const reports = new ReportReader(session);
    const copy = copyOf(1);
    await postCopy(session, copyMessage(copy));
    const ready = await reports.next(readyAt(copy.revision));
    // The hub sends the same copy again (as after a reconnect), then a newer one.
    expect((await postCopy(session, copyMessage(copy))).status).toBe(202);
    const spec = rollout();
    (spec.resources[1] as unknown as { data: Record<string, string> }).data['site'] = 'newer';
    const newer = copyOf(2, spec);
    await postCopy(session, copyMessage(newer));
    const { index } = await reports.next(readyAt(newer.revision), ready.index + 1);
    const between = reports.lines.slice(ready.index + 1, index);
    expect(between.filter((line) => line.kind === 'copy' && line.revision === copy.revision)).toEqual([]);
  });

  it('drops an older copy whose body arrives after a newer one was accepted', async () => {
    const { session } = await startAgent();
    const reports = new ReportReader(session);
    const older = copyOf(1);
    const spec = rollout();
    (spec.resources[1] as unknown as { data: Record<string, string> }).data['site'] = 'newer';
    const newer = copyOf(2, spec);
    // The older stream opens first but its body is held back until the newer one is accepted.
    const slow = session.request({ ':method': 'POST', ':path': ROLLOUT_APPLY_PATH });
    slow.on('error', () => {});
    let slowStatus = 0;
    slow.on('response', (headers) => (slowStatus = Number(headers[':status'])));
    const text = JSON.stringify(copyMessage(older));
    slow.write(text.slice(0, 10));
    expect((await postCopy(session, copyMessage(newer))).status).toBe(202);
    slow.end(text.slice(10));
    slow.resume();
    await once(slow, 'close');
    expect(slowStatus).toBe(202);
    await reports.next(readyAt(newer.revision));
    expect(deploymentRevisions()).toEqual([newer.revision]);
  });

  it('prunes what a later copy drops, then removes everything and says so', async () => {
    const { session } = await startAgent();
    const reports = new ReportReader(session);
    const spec = rollout();
    spec.resources.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'extra', namespace: 'shop' } });
    const first = copyOf(1, spec);
    await postCopy(session, copyMessage(first));
    await reports.next(readyAt(first.revision));
    expect(cluster.getObject({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'extra' })).toBeDefined();
    const second = copyOf(2);
    await postCopy(session, copyMessage(second));
    await reports.next(readyAt(second.revision));
    expect(cluster.getObject({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'extra' })).toBe(
      undefined,
    );

    expect((await postRemove(session)).status).toBe(202);
    const { line } = await reports.next((l) => l.kind === 'removed');
    expect(line).toEqual({ kind: 'removed', rollout: 'web', cluster: CLUSTER.name });
    expect(cluster.getObject({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web' })).toBe(
      undefined,
    );
    expect(
      cluster.getObject({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'kube-system', name: 'edgeadm-rollout-web' }),
    ).toBe(undefined);
  });

  it('after a restart, reports what the inventories say it runs, read as the recorded owner', async () => {
    const first = await startAgent();
    const reports = new ReportReader(first.session);
    const copy = copyOf(1);
    await postCopy(first.session, copyMessage(copy));
    await reports.next(readyAt(copy.revision));
    await first.close();

    cluster.clearRequests();
    const second = await startAgent();
    const again = new ReportReader(second.session);
    const { index } = await again.next(readyAt(copy.revision));
    expect(index).toBe(0);
    expect(second.agent.running()).toEqual([{ rollout: 'web', revision: copy.revision, state: 'applied' }]);
    const reads = cluster.requests.filter((r) => r.namespace === 'shop' && r.method === 'GET');
    expect(reads.length).toBeGreaterThan(0);
    for (const read of reads) expect(read.impersonatedUser).toBe(OWNER.user);
  });

  it('sends a removal that finished without a report stream on the next stream', async () => {
    const { session } = await startAgent();
    const reports = new ReportReader(session);
    const copy = copyOf(1);
    await postCopy(session, copyMessage(copy));
    await reports.next(readyAt(copy.revision));
    reports.close();
    await reports.ended();
    await postRemove(session);
    // The removal is done when the inventory is gone.
    while (
      cluster.getObject({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'kube-system', name: 'edgeadm-rollout-web' })
    )
      await new Promise<void>((resolve) => {
        const stop = cluster.store.subscribe(() => {
          stop();
          resolve();
        });
      });
    const next = new ReportReader(session);
    const { line } = await next.next(() => true);
    expect(line).toEqual({ kind: 'removed', rollout: 'web', cluster: CLUSTER.name });
  });

  it('keeps one report stream: a new one ends the old and starts with the current reports', async () => {
    const { session } = await startAgent();
    const first = new ReportReader(session);
    const copy = copyOf(1);
    await postCopy(session, copyMessage(copy));
    await first.next(readyAt(copy.revision));
    const second = new ReportReader(session);
    await first.ended();
    const { index } = await second.next(readyAt(copy.revision));
    expect(index).toBe(0);
  });

  it('gives a report reader that stalled, once it reads again, the latest report', async () => {
    // A 1 KiB window: the agent's writes stop at once when the hub does not read.
    const { session } = await startAgent({ settings: { initialWindowSize: 1024 } });
    const silent = new ReportReader(session, { isPaused: true });
    const copies = [1, 2, 3, 4, 5, 6].map((n) => {
      const spec = rollout();
      (spec.resources[1] as unknown as { data: Record<string, string> }).data['site'] = `site-${n}-${'x'.repeat(400)}`;
      return copyOf(n, spec);
    });
    for (const copy of copies) {
      await postCopy(session, copyMessage(copy));
      // Each revision is applied before the next is sent: every one yields its own report lines.
      while (deploymentRevisions().at(-1) !== copy.revision)
        await new Promise<void>((resolve) => {
          const stop = cluster.store.subscribe(() => {
            stop();
            resolve();
          });
        });
    }
    const last = copies.at(-1)!.revision;
    // Only now does the hub read: it gets what the window held, then the latest report (ReportSink below bounds the rest).
    silent.stream.resume();
    await silent.next(readyAt(last));
  });

  it('answers 400 to a message that is not JSON or not a copy, and 413 to one past the limit', async () => {
    const { session, agent } = await startAgent();
    const badJson = await exchange(session, { ':method': 'POST', ':path': ROLLOUT_APPLY_PATH }, '{"rollout":');
    expect(badJson.status).toBe(400);
    expect(JSON.parse(badJson.body).message).toMatch(/not JSON/);
    const badName = await postCopy(session, { ...copyMessage(copyOf(1)), rollout: '../web' });
    expect(badName.status).toBe(400);
    const badOwner = await postCopy(
      session,
      copyMessage(copyOf(1), { user: 'ops\r\nImpersonate-User: admin', groups: [] }),
    );
    expect(badOwner.status).toBe(400);
    // A declared length past the limit is answered before any of the body is sent.
    const declared = session.request({
      ':method': 'POST',
      ':path': ROLLOUT_APPLY_PATH,
      'content-length': String(MAX_COPY_MESSAGE_BYTES + 1),
    });
    declared.on('error', () => {});
    const [declaredHeaders] = (await once(declared, 'response')) as [Record<string, unknown>];
    expect(declaredHeaders[':status']).toBe(413);
    const streamed = await exchange(
      session,
      { ':method': 'POST', ':path': ROLLOUT_APPLY_PATH },
      Buffer.alloc(MAX_COPY_MESSAGE_BYTES + 1, 0x20),
    );
    expect(streamed.status).toBe(413);
    expect(agent.running()).toEqual([]);
  });

  it('reports an object the API server finds invalid as failed, with its words', async () => {
    const { session } = await startAgent();
    const reports = new ReportReader(session);
    const spec = rollout();
    spec.resources.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'Bad_Name', namespace: 'shop' } });
    const copy = copyOf(1, spec);
    await postCopy(session, copyMessage(copy));
    const { line } = await reports.next((l) => l.kind === 'copy' && l.readiness === 'failed');
    expect(line).toMatchObject({ revision: copy.revision });
    expect((line as { message: string }).message).toMatch(/Bad_Name.*Invalid value/);
  });

  it('refuses an object whose name is not one path segment before any request, and reports it failed', async () => {
    const { session } = await startAgent();
    const reports = new ReportReader(session);
    const spec = rollout();
    spec.resources.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: '..', namespace: 'shop' } });
    const copy = copyOf(1, spec);
    await postCopy(session, copyMessage(copy));
    const { line } = await reports.next((l) => l.kind === 'copy' && l.readiness === 'failed');
    expect((line as { message: string }).message).toMatch(/ConfigMap name "\.\." may not be/);
    expect(cluster.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  });
});
