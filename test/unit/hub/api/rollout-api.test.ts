/**
 * The rollout routes of the operator API, called as the hub's request
 * handler calls them, against the real store (SQLite in memory) and the real
 * controller (with a fake delivery): who may do what, dry runs that store
 * nothing, 400s that name the field, and a 10 MiB Rollout.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HubContext } from '../../../../src/hub/api/hub-context.js';
import { HUB_ADMIN_USER } from '../../../../src/hub/identity/authenticate.js';
import { hashUserToken, newUserToken } from '../../../../src/hub/identity/hub-tokens.js';
import { MAX_API_BODY_BYTES, MAX_ROLLOUT_BODY_BYTES } from '../../../../src/hub/limits.js';
import { HubMetrics } from '../../../../src/hub/metrics/hub-metrics.js';
import { RolloutController } from '../../../../src/hub/rollouts/rollout-controller.js';
import { type DeliveryOutcome } from '../../../../src/hub/rollouts/rollout-delivery.js';
import { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import type { HubPki } from '../../../../src/hub/identity/hub-pki.js';
import type { CopyMessage, RemoveMessage } from '../../../../src/rollout/wire.js';
import { rolloutDocument } from '../../rollout/fixtures.js';
import { callApi, type ApiAnswer } from './operator-api-harness.js';

type Answer = ApiAnswer;

let store: SqliteHubStore;
let controller: RolloutController;
let context: HubContext;
let copies: CopyMessage[];
/** Every removal sent to an agent, with the identity it runs as. */
let removals: { cluster: string; message: RemoveMessage }[];
const adminToken = newUserToken();
/** A user scoped to the eu shops. */
const euToken = newUserToken();

function call(method: string, url: string, options: { token?: string; body?: unknown } = {}): Promise<Answer> {
  return callApi(context, method, url, options);
}

async function addCluster(name: string, labels: Record<string, string>): Promise<void> {
  await store.addCluster({
    name,
    labels,
    certSerial: name,
    certNotAfter: '2030-01-01T00:00:00.000Z',
    registeredAt: '2026-01-01T00:00:00.000Z',
  });
}

const strategy = { waves: ['100%'], maxUnavailable: '100%', soakSeconds: 0 };
const adminActor = { user: HUB_ADMIN_USER, groups: [], clustersSelector: '', isAdmin: true };

beforeEach(async () => {
  store = await SqliteHubStore.open(':memory:');
  const createdAt = new Date().toISOString();
  await store.putUser({
    name: HUB_ADMIN_USER,
    tokenHash: hashUserToken(adminToken),
    clustersSelector: '',
    groups: [],
    isAdmin: true,
    createdAt,
  });
  await store.putUser({
    name: 'eve',
    tokenHash: hashUserToken(euToken),
    clustersSelector: 'env=prod,region=eu',
    groups: ['shops-eu'],
    isAdmin: false,
    createdAt,
  });
  await addCluster('eu-1', { env: 'prod', region: 'eu' });
  await addCluster('eu-2', { env: 'prod', region: 'eu' });
  await addCluster('us-1', { env: 'prod', region: 'us' });
  copies = [];
  removals = [];
  const delivery = {
    sendCopy: async (_cluster: string, message: CopyMessage): Promise<DeliveryOutcome> => {
      copies.push(message);
      return { status: 'delivered' };
    },
    sendRemove: async (cluster: string, message: RemoveMessage): Promise<DeliveryOutcome> => {
      removals.push({ cluster, message });
      return { status: 'delivered' };
    },
  };
  controller = await RolloutController.start({
    store,
    delivery,
    logger: silentLogger,
    passIntervalMs: 0,
    connected: ['eu-1', 'eu-2', 'us-1'],
  });
  context = {
    store,
    pki: {} as HubPki,
    metrics: new HubMetrics(),
    logger: silentLogger,
    now: () => new Date('2026-03-01T10:00:00.000Z'),
    advertiseUrl: 'https://127.0.0.1:9443',
    tunnels: new Map(),
    closeTunnel: () => {},
    rollouts: controller,
  };
});

afterEach(async () => {
  await controller.stop();
  await store.close();
});

describe('rollout API: apply', () => {
  it('asks for a token, creates, answers an unchanged document without a new revision, and counts revisions', async () => {
    const document = rolloutDocument({ strategy });
    expect((await call('PUT', '/hub/v1/rollouts/web', { body: document })).status).toBe(401);
    const created = await call('PUT', '/hub/v1/rollouts/web', { token: adminToken, body: document });
    expect(created).toMatchObject({
      status: 201,
      json: { name: 'web', revision: 1, isCreated: true, isUnchanged: false },
    });
    const again = await call('PUT', '/hub/v1/rollouts/web', { token: adminToken, body: document });
    expect(again).toMatchObject({ status: 200, json: { revision: 1, isUnchanged: true, isCreated: false } });
    const changed = await call('PUT', '/hub/v1/rollouts/web', {
      token: adminToken,
      body: rolloutDocument({ strategy: { ...strategy, soakSeconds: 5 } }),
    });
    expect(changed).toMatchObject({ status: 200, json: { revision: 2, isUnchanged: false } });
    const stored = await call('GET', '/hub/v1/rollouts/web/document', { token: adminToken });
    expect(stored.json).toMatchObject({ revision: 2 });
  });

  it.each([
    ['a wave that is no count', rolloutDocument({ strategy: { waves: ['x'] } }), /spec\.strategy\.waves\[0\]/],
    ['no resources', rolloutDocument({ resources: [] }), /spec\.resources/],
    ['a name unlike the path', { ...rolloutDocument(), metadata: { name: 'other' } }, /metadata\.name/],
    ['a body that is not JSON', '{"apiVersion":', /not a JSON object/],
  ])('answers 400 to %s, naming the field', async (_name, body, message) => {
    const answer = await call('PUT', '/hub/v1/rollouts/web', { token: adminToken, body });
    expect(answer.status).toBe(400);
    expect(answer.json['message']).toMatch(message);
    expect((await call('GET', '/hub/v1/rollouts', { token: adminToken })).json['rollouts']).toEqual([]);
  });

  it('answers 400 to a rollout name that is no DNS label', async () => {
    const answer = await call('GET', '/hub/v1/rollouts/Web_1', { token: adminToken });
    expect(answer).toMatchObject({ status: 400, json: { code: 'E_ROLLOUT_NAME' } });
  });

  it('takes a Rollout of 10 MiB of manifests, and refuses one past its bound; other routes keep their bound', async () => {
    const chunk = 'x'.repeat(1024 * 1024);
    const resources = Array.from({ length: 10 }, (_, i) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `big-${i}`, namespace: 'shop' },
      data: { blob: chunk },
    }));
    const big = rolloutDocument({ strategy, resources });
    expect(Buffer.byteLength(JSON.stringify(big))).toBeGreaterThan(10 * 1024 * 1024);
    expect(Buffer.byteLength(JSON.stringify(big))).toBeGreaterThan(MAX_API_BODY_BYTES);
    const answer = await call('PUT', '/hub/v1/rollouts/web', { token: adminToken, body: big });
    expect(answer).toMatchObject({ status: 201, json: { revision: 1 } });
    await controller.settled();
    expect(copies.map((copy) => copy.copy.objects.length)).toEqual([10, 10, 10]);

    const tooBig = 'y'.repeat(MAX_ROLLOUT_BODY_BYTES + 1);
    expect((await call('PUT', '/hub/v1/rollouts/web', { token: adminToken, body: tooBig })).status).toBe(413);
    const user = { name: 'bob', clustersSelector: '', pad: 'z'.repeat(MAX_API_BODY_BYTES) };
    expect((await call('POST', '/hub/v1/users', { token: adminToken, body: user })).status).toBe(413);
  });

  it('plans a dry run (waves and each cluster’s rendered copy, errors per cluster) and stores nothing', async () => {
    await store.setClusterProperties('eu-2', { tag: '2.0' });
    controller.clustersChanged();
    await controller.settled();
    const document = rolloutDocument({
      strategy: { waves: [1, '100%'] },
      placement: { clusterSelector: 'env=prod' },
    });
    const answer = await call('PUT', '/hub/v1/rollouts/web?dryRun=true', { token: adminToken, body: document });
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({
      revision: 1,
      isCreated: true,
      dryRun: { waves: [['eu-1'], ['eu-2', 'us-1']] },
    });
    const plan = answer.json['dryRun'] as {
      copies: { cluster: string; objects: { kind: string; spec?: unknown }[] }[];
    };
    const image = (cluster: string): unknown =>
      JSON.stringify(
        plan.copies.find((copy) => copy.cluster === cluster)?.objects.find((o) => o.kind === 'Deployment'),
      );
    expect(image('eu-2')).toContain('registry.local/web:2.0');
    expect(image('eu-1')).toContain('registry.local/web:1.0');
    expect((await call('GET', '/hub/v1/rollouts', { token: adminToken })).json['rollouts']).toEqual([]);
    await controller.settled();
    expect(copies).toEqual([]);

    // A customization that cannot be rendered for one cluster is that cluster's error.
    const broken = rolloutDocument({
      strategy,
      resources: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { z: '${property:zone}' } }],
    });
    const failed = await call('PUT', '/hub/v1/rollouts/web?dryRun=true', { token: adminToken, body: broken });
    expect((failed.json['dryRun'] as { copies: unknown[] }).copies).toContainEqual({
      cluster: 'eu-1',
      error: expect.stringContaining('has no property "zone"'),
    });
  });
});

describe('rollout API: scoped users', () => {
  it('refuses a scoped user a placement that can reach outside their clusters, and takes one within', async () => {
    const outside = rolloutDocument({ strategy, placement: { clusterSelector: 'env=prod' } });
    const refused = await call('PUT', '/hub/v1/rollouts/web', { token: euToken, body: outside });
    expect(refused.status).toBe(403);
    expect(refused.json['message']).toMatch(/outside yours/);
    const named = rolloutDocument({ strategy, placement: { clusters: ['eu-1', 'us-1'] } });
    const refusedByName = await call('PUT', '/hub/v1/rollouts/web', { token: euToken, body: named });
    expect(refusedByName.status).toBe(403);
    expect(refusedByName.json['message']).toMatch(/"us-1"/);
    const dryRun = await call('PUT', '/hub/v1/rollouts/web?dryRun=true', { token: euToken, body: outside });
    expect(dryRun.status).toBe(403);

    const within = rolloutDocument({ strategy, placement: { clusterSelector: 'env=prod,region=eu' } });
    expect((await call('PUT', '/hub/v1/rollouts/web', { token: euToken, body: within })).status).toBe(201);
    await controller.settled();
    // The copies act as the owner, as the kube proxy would impersonate them.
    expect(copies.map((copy) => copy.owner)).toEqual([
      { user: 'eve', groups: ['shops-eu'] },
      { user: 'eve', groups: ['shops-eu'] },
    ]);
  });

  it("shows a scoped user only rollouts within their clusters, and answers 404 for the others' rollouts", async () => {
    const everywhere = rolloutDocument({ strategy, placement: { clusterSelector: 'env=prod' } });
    expect((await call('PUT', '/hub/v1/rollouts/web', { token: adminToken, body: everywhere })).status).toBe(201);
    const eu = { ...rolloutDocument({ strategy, placement: { clusterSelector: 'region=eu,env=prod' } }) };
    (eu['metadata'] as { name: string }).name = 'shop-eu';
    expect((await call('PUT', '/hub/v1/rollouts/shop-eu', { token: adminToken, body: eu })).status).toBe(201);

    const listed = await call('GET', '/hub/v1/rollouts', { token: euToken });
    expect((listed.json['rollouts'] as { name: string }[]).map((item) => item.name)).toEqual(['shop-eu']);
    for (const [method, url] of [
      ['GET', '/hub/v1/rollouts/web'],
      ['GET', '/hub/v1/rollouts/web/document'],
      ['POST', '/hub/v1/rollouts/web/pause'],
      ['POST', '/hub/v1/rollouts/web/undo'],
      ['DELETE', '/hub/v1/rollouts/web'],
    ] as const) {
      expect((await call(method, url, { token: euToken })).status, `${method} ${url}`).toBe(404);
    }
    // Nor may they take the name over.
    const takeover = rolloutDocument({ strategy, placement: { clusterSelector: 'env=prod,region=eu' } });
    expect((await call('PUT', '/hub/v1/rollouts/web', { token: euToken, body: takeover })).status).toBe(403);
    expect((await call('GET', '/hub/v1/rollouts/web', { token: adminToken })).json).toMatchObject({ revision: 1 });
    // Seeing a rollout is not owning it: the admin's rollout in her scope is not hers to change.
    expect((await call('POST', '/hub/v1/rollouts/shop-eu/pause', { token: euToken })).json).toMatchObject({
      code: 'E_ROLLOUT_NOT_OWNER',
    });
  });
});

describe('rollout API: undo within scope', () => {
  it('refuses a scoped user an undo to a revision that reached outside their clusters', async () => {
    const everywhere = rolloutDocument({ strategy, placement: { clusterSelector: 'env=prod' } });
    const eu = rolloutDocument({ strategy, placement: { clusterSelector: 'env=prod,region=eu' } });
    await call('PUT', '/hub/v1/rollouts/web', { token: adminToken, body: everywhere });
    await call('PUT', '/hub/v1/rollouts/web', { token: adminToken, body: eu });
    expect((await call('GET', '/hub/v1/rollouts/web', { token: euToken })).status).toBe(200);
    const undo = await call('POST', '/hub/v1/rollouts/web/undo', { token: euToken });
    expect(undo.status).toBe(403);
    // Refused before the scope is even weighed: the rollout is the admin's.
    expect(undo.json['message']).toMatch(/owned by "edgeadm-hub-admin"/);
    expect((await call('POST', '/hub/v1/rollouts/web/undo', { token: adminToken })).json).toMatchObject({
      revision: 3,
    });
  });
});

describe('rollout API: status, commands, delete', () => {
  it('answers status with per-cluster rows, a long poll that returns at a change, and delete', async () => {
    await call('PUT', '/hub/v1/rollouts/web', { token: adminToken, body: rolloutDocument({ strategy }) });
    await controller.settled();
    const status = await call('GET', '/hub/v1/rollouts/web?clusters=true', { token: adminToken });
    expect(status.json).toMatchObject({ name: 'web', revision: 1, state: 'progressing', owner: HUB_ADMIN_USER });
    expect((status.json['clusters'] as { cluster: string }[]).map((row) => row.cluster)).toEqual([
      'eu-1',
      'eu-2',
      'us-1',
    ]);
    const version = status.json['statusVersion'] as number;
    const waiting = call('GET', `/hub/v1/rollouts/web?waitForChangeFrom=${version}`, { token: adminToken });
    await call('POST', '/hub/v1/rollouts/web/pause', { token: adminToken });
    const changed = await waiting;
    expect(changed.json).toMatchObject({ state: 'paused' });
    expect(changed.json['statusVersion']).toBeGreaterThan(version);
    expect((await call('GET', '/hub/v1/rollouts/web?waitForChangeFrom=x', { token: adminToken })).status).toBe(400);
    expect((await call('POST', '/hub/v1/rollouts/web/undo', { token: adminToken })).status).toBe(409);
    const deleted = await call('DELETE', '/hub/v1/rollouts/web', { token: adminToken });
    expect(deleted.json).toEqual({ name: 'web', removed: ['eu-1', 'eu-2', 'us-1'], pendingRemovals: [] });
    expect((await call('GET', '/hub/v1/rollouts/web', { token: adminToken })).status).toBe(404);
  });
});

describe('cluster holds and properties', () => {
  it('holds and releases a cluster within the user’s reach, and refuses one outside it', async () => {
    const held = await call('PUT', '/hub/v1/clusters/eu-1/hold', {
      token: adminToken,
      body: { reason: 'opening hours' },
    });
    expect(held).toMatchObject({
      status: 200,
      json: { name: 'eu-1', hold: { reason: 'opening hours', by: HUB_ADMIN_USER, since: '2026-03-01T10:00:00.000Z' } },
    });
    expect((await call('PUT', '/hub/v1/clusters/us-1/hold', { token: euToken, body: { reason: 'x' } })).status).toBe(
      403,
    );
    expect((await call('PUT', '/hub/v1/clusters/nosuch/hold', { token: euToken, body: { reason: 'x' } })).status).toBe(
      403,
    );
    expect(
      (await call('PUT', '/hub/v1/clusters/nosuch/hold', { token: adminToken, body: { reason: 'x' } })).status,
    ).toBe(404);
    expect((await call('PUT', '/hub/v1/clusters/eu-1/hold', { token: adminToken, body: { reason: '' } })).status).toBe(
      400,
    );
    expect((await call('PUT', '/hub/v1/clusters/eu-1/hold', { body: { reason: 'x' } })).status).toBe(401);

    await call('PUT', '/hub/v1/rollouts/web', { token: adminToken, body: rolloutDocument({ strategy }) });
    await controller.settled();
    expect(copies.map((copy) => copy.copy.objects.find((o) => o.kind === 'ConfigMap')?.['data'])).not.toContainEqual(
      expect.objectContaining({ site: 'eu-1' }),
    );
    const released = await call('DELETE', '/hub/v1/clusters/eu-1/hold', { token: adminToken });
    expect(released.json['hold']).toBeUndefined();
    await controller.settled();
    expect(copies.map((copy) => copy.copy.objects.find((o) => o.kind === 'ConfigMap')?.['data'])).toContainEqual(
      expect.objectContaining({ site: 'eu-1' }),
    );
  });

  it('sets properties, and answers 400 naming a bad property', async () => {
    const set = await call('PUT', '/hub/v1/clusters/eu-1/properties', {
      token: adminToken,
      body: { properties: { tag: '1.2' } },
    });
    expect(set.json).toMatchObject({ name: 'eu-1', properties: { tag: '1.2' } });
    const bad = await call('PUT', '/hub/v1/clusters/eu-1/properties', {
      token: adminToken,
      body: { properties: { 'a|b': 'x' } },
    });
    expect(bad.status).toBe(400);
    expect(bad.json['message']).toMatch(/properties\.a\|b/);
    const notString = await call('PUT', '/hub/v1/clusters/eu-1/properties', {
      token: adminToken,
      body: { properties: { n: 1 } },
    });
    expect(notString.json['message']).toMatch(/properties\.n/);
    expect((await call('GET', '/hub/v1/clusters/eu-1', { token: adminToken })).json).toMatchObject({
      properties: { tag: '1.2' },
    });
  });
});

describe('rollout API: every write as the user who caused it (issue #30)', () => {
  const inEu = { strategy, placement: { clusterSelector: 'env=prod,region=eu' } };
  const eveIdentity = { user: 'eve', groups: ['shops-eu'] };
  const adminIdentity = { user: HUB_ADMIN_USER, groups: [] };

  function named(name: string, spec: Record<string, unknown>): Record<string, unknown> {
    const document = rolloutDocument(spec);
    (document['metadata'] as { name: string }).name = name;
    return document;
  }

  it("refuses a scoped user the deletion of an admin's rollout in her scope; a removal runs as whoever deletes", async () => {
    expect((await call('PUT', '/hub/v1/rollouts/web', { token: adminToken, body: named('web', inEu) })).status).toBe(
      201,
    );
    await controller.settled();
    expect((await call('GET', '/hub/v1/rollouts/web', { token: euToken })).status).toBe(200);
    const refused = await call('DELETE', '/hub/v1/rollouts/web', { token: euToken });
    expect(refused).toMatchObject({ status: 403, json: { code: 'E_ROLLOUT_NOT_OWNER' } });
    expect(refused.json['message']).toMatch(/owned by "edgeadm-hub-admin"/);
    await controller.settled();
    expect(removals).toEqual([]);
    expect((await call('GET', '/hub/v1/rollouts/web', { token: adminToken })).json).toMatchObject({ revision: 1 });

    // Her own rollout she removes as herself; the admin's deletion of hers runs as the admin.
    await call('PUT', '/hub/v1/rollouts/mine', { token: euToken, body: named('mine', inEu) });
    await call('PUT', '/hub/v1/rollouts/hers', { token: euToken, body: named('hers', inEu) });
    await controller.settled();
    expect((await call('DELETE', '/hub/v1/rollouts/mine', { token: euToken })).json).toMatchObject({
      removed: ['eu-1', 'eu-2'],
    });
    expect((await call('DELETE', '/hub/v1/rollouts/hers', { token: adminToken })).status).toBe(200);
    expect(removals.map(({ cluster, message }) => [message.rollout, cluster, message.owner])).toEqual([
      ['mine', 'eu-1', eveIdentity],
      ['mine', 'eu-2', eveIdentity],
      ['hers', 'eu-1', adminIdentity],
      ['hers', 'eu-2', adminIdentity],
    ]);
  });

  it("refuses a scoped user a takeover, undo, pause, resume or abort of an admin's rollout", async () => {
    await call('PUT', '/hub/v1/rollouts/web', { token: adminToken, body: named('web', inEu) });
    await call('PUT', '/hub/v1/rollouts/web', {
      token: adminToken,
      body: named('web', { ...inEu, strategy: { ...strategy, soakSeconds: 1 } }),
    });
    await controller.settled();
    const takeover = await call('PUT', '/hub/v1/rollouts/web', {
      token: euToken,
      body: named('web', { ...inEu, strategy: { ...strategy, soakSeconds: 2 } }),
    });
    expect(takeover).toMatchObject({ status: 403, json: { code: 'E_ROLLOUT_NOT_OWNER' } });
    const dryRun = await call('PUT', '/hub/v1/rollouts/web?dryRun=true', { token: euToken, body: named('web', inEu) });
    expect(dryRun.status).toBe(403);
    for (const action of ['undo', 'pause', 'resume', 'abort']) {
      const answer = await call('POST', `/hub/v1/rollouts/web/${action}`, { token: euToken });
      expect(answer.json, action).toMatchObject({ code: 'E_ROLLOUT_NOT_OWNER' });
    }
    expect((await call('GET', '/hub/v1/rollouts/web', { token: adminToken })).json).toMatchObject({
      revision: 2,
      state: 'progressing',
      owner: HUB_ADMIN_USER,
    });
    await controller.settled();
    expect(new Set(copies.map((copy) => copy.owner.user))).toEqual(new Set([HUB_ADMIN_USER]));
  });

  it('lets only an admin set the properties or the hold of a cluster, even one in a user’s scope', async () => {
    const properties = await call('PUT', '/hub/v1/clusters/eu-1/properties', {
      token: euToken,
      body: { properties: { tag: 'evil' } },
    });
    expect(properties).toMatchObject({ status: 403, json: { code: 'E_HUB_FORBIDDEN' } });
    expect(properties.json['message']).toMatch(/only a hub admin/);
    const hold = await call('PUT', '/hub/v1/clusters/eu-1/hold', { token: euToken, body: { reason: 'mine' } });
    expect(hold.status).toBe(403);
    expect((await call('DELETE', '/hub/v1/clusters/eu-1/hold', { token: euToken })).status).toBe(403);
    const cluster = (await call('GET', '/hub/v1/clusters/eu-1', { token: adminToken })).json;
    expect(cluster['properties']).toBeUndefined();
    expect(cluster['hold']).toBeUndefined();
  });
});

/** `depth` levels of arrays and objects, one inside the other, built without recursion. */
function nestedValue(depth: number, isArray: (level: number) => boolean = () => true): unknown {
  let value: unknown = 'leaf';
  for (let level = 0; level < depth; level += 1) value = isArray(level) ? [value] : { a: value };
  return value;
}

function withDeepResource(spec: unknown): Record<string, unknown> {
  const document = rolloutDocument({ strategy });
  (document['spec'] as { resources: unknown[] }).resources.push({
    apiVersion: 'example.io/v1',
    kind: 'Deep',
    metadata: { name: 'deep', namespace: 'shop' },
    spec,
  });
  return document;
}

describe('rollout API: no document can stop the hub (issue #30)', () => {
  it('answers a deeply nested Rollout 400 naming the depth limit, and stores nothing', async () => {
    for (const depth of [3000, 100_000]) {
      // Written as text: the test's own JSON.stringify could not write it.
      const body = JSON.stringify(withDeepResource('DEEP')).replace(
        '"DEEP"',
        `${'['.repeat(depth)}"leaf"${']'.repeat(depth)}`,
      );
      const answer = await call('PUT', '/hub/v1/rollouts/web', { token: euToken, body });
      expect(answer.crash).toBeUndefined();
      expect(answer, String(depth)).toMatchObject({ status: 400, json: { code: 'E_HUB_DOCUMENT_LIMIT' } });
      expect(answer.json['message']).toMatch(
        /nests deeper than 128 levels \(the hub's depth limit\), at \$\.spec\.resources\[3\]\.spec/,
      );
    }
    // Every other body of the hub is held to the same limits.
    const properties = await call('PUT', '/hub/v1/clusters/eu-1/properties', {
      token: adminToken,
      body: { properties: nestedValue(1000) },
    });
    expect(properties).toMatchObject({ status: 400, json: { code: 'E_HUB_DOCUMENT_LIMIT' } });
    expect(await store.listRollouts()).toEqual([]);
  });

  it('starts a controller again on the store after any document it accepted, and loads that document', async () => {
    // Any JSON inside a resource, and nestings of any depth around the limit, arrays and objects mixed.
    const deep = fc
      .tuple(fc.integer({ min: 1, max: 400 }), fc.integer({ min: 1, max: 7 }))
      .map(([depth, period]) => nestedValue(depth, (level) => level % period === 0));
    const spec = fc.oneof(
      fc.jsonValue(),
      deep,
      fc.jsonValue().map((value) => [value, nestedValue(120)]),
    );
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(spec, async (value) => {
        const answer = await call('PUT', '/hub/v1/rollouts/web', { token: adminToken, body: withDeepResource(value) });
        expect(answer.crash).toBeUndefined();
        expect(answer.status).not.toBe(500);
        if (answer.status >= 300) return;
        accepted += 1;
        await controller.settled();
        const restarted = await RolloutController.start({
          store,
          delivery: {
            sendCopy: async () => ({ status: 'delivered' }),
            sendRemove: async () => ({ status: 'delivered' }),
          },
          logger: silentLogger,
          passIntervalMs: 0,
        });
        try {
          expect(restarted.list(adminActor).map((item) => item.name)).toEqual(['web']);
          expect(restarted.status('web', adminActor, false)).toMatchObject({ name: 'web' });
        } finally {
          await restarted.stop();
        }
      }),
      { numRuns: 120 },
    );
    expect(accepted).toBeGreaterThan(0);
  });
});

describe('rollout API: generated input', () => {
  it('answers random documents, paths and queries with anything but a 500', async () => {
    const base = rolloutDocument({ strategy });
    // Documents near a valid one: any spec field replaced by any JSON, or a wholly random body.
    const specField = fc.constantFrom('resources', 'placement', 'customization', 'strategy', 'status');
    const body = fc.oneof(
      fc.tuple(specField, fc.jsonValue()).map(([key, value]) => ({
        ...base,
        spec: { ...(base['spec'] as object), [key]: value },
      })),
      fc.jsonValue().map((value) => ({ ...base, spec: value })),
      fc.json(),
      fc.string(),
    );
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom(adminToken, euToken), fc.boolean(), async (document, token, dryRun) => {
        const url = `/hub/v1/rollouts/web${dryRun ? '?dryRun=true' : ''}`;
        const answer = await call('PUT', url, { token, body: document });
        expect(answer.crash).toBeUndefined();
        expect(answer.status).not.toBe(500);
      }),
      { numRuns: 200 },
    );
    const segment = fc.oneof(
      fc.string({ unit: 'grapheme' }),
      fc.stringMatching(/^(%[0-9A-Fa-fzZ]{0,2}|[a-z0-9./-])*$/),
    );
    const prefix = fc.constantFrom('/hub/v1/rollouts/', '/hub/v1/clusters/');
    const suffix = fc.constantFrom('', '/pause', '/undo', '/document', '/hold', '/properties', '/x/y');
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'PUT', 'POST', 'DELETE'),
        prefix,
        segment,
        suffix,
        fc.string(),
        async (method, start, name, end, query) => {
          const url = `${start}${name}${end}?waitForChangeFrom=${query}&clusters=${query}`;
          const answer = await call(method, url, { token: adminToken, body: { reason: query, properties: {} } });
          expect(answer.crash, url).toBeUndefined();
          expect(answer.status, url).not.toBe(500);
        },
      ),
      { numRuns: 300 },
    );
  });
});
