/**
 * The simulated API server spoken to over HTTPS directly: discovery, the
 * object verbs and their Status failures, selectors, patches and
 * server-side apply, watches (history, 410, bookmarks, selector
 * transitions), authentication (tokens, bootstrap tokens, client
 * certificates), impersonation, RBAC, logs, exec and port-forward over
 * WebSocket, and the test controls (kill/restart, pause/resume).
 */
import { createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectWebSocket, startSimApiServer } from '../../support/sim-apiserver/index.js';
import type { SimApiServer } from '../../support/sim-apiserver/index.js';
import { SimCertificateAuthority } from '../../support/sim-apiserver/pki.js';
import { call, openStream } from './http-client.js';
import type { SimRequest } from './http-client.js';

const SECRETS = '/api/v1/namespaces/default/secrets';
const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';

function configMap(
  name: string,
  data: Record<string, string>,
  labels?: Record<string, string>,
): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'default', ...(labels ? { labels } : {}) },
    data,
  };
}

function b64(text: string): string {
  return Buffer.from(text).toString('base64');
}

let server: SimApiServer;

beforeAll(async () => {
  server = await startSimApiServer({
    recordRequests: true,
    tokens: { 'alice-token': { user: 'alice', groups: ['team-a'] }, 'bob-token': { user: 'bob' } },
    bookmarkIntervalMs: 200,
  });
});

afterAll(async () => {
  await server.stop();
});

describe('discovery and health', () => {
  it('reports a simulated version and answers health checks', async () => {
    const version = await call(server, { path: '/version' });
    expect(version.json.gitVersion).toBe('v1.30.4+sim');
    expect(version.json.minor).toBe('30');
    for (const path of ['/healthz', '/readyz', '/livez']) expect((await call(server, { path })).text).toBe('ok');
  });

  it('lists the core resources and the rbac and coordination groups', async () => {
    const core = await call(server, { path: '/api/v1' });
    const names = core.json.resources.map((r: { name: string }) => r.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'namespaces',
        'secrets',
        'configmaps',
        'nodes',
        'pods',
        'pods/log',
        'pods/exec',
        'services',
      ]),
    );
    const groups = await call(server, { path: '/apis' });
    const groupVersions = groups.json.groups.flatMap((g: { versions: { groupVersion: string }[] }) =>
      g.versions.map((v) => v.groupVersion),
    );
    expect(groupVersions).toEqual(expect.arrayContaining(['rbac.authorization.k8s.io/v1', 'coordination.k8s.io/v1']));
    const leases = await call(server, { path: '/apis/coordination.k8s.io/v1' });
    expect(leases.json.resources[0]).toMatchObject({ name: 'leases', kind: 'Lease', namespaced: true });
  });

  it('answers aggregated discovery in its own content type when asked for it', async () => {
    const res = await call(server, {
      path: '/apis',
      headers: { Accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' },
    });
    expect(res.headers['content-type']).toBe('application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    const rbac = res.json.items.find(
      (i: { metadata: { name: string } }) => i.metadata.name === 'rbac.authorization.k8s.io',
    );
    expect(rbac.versions[0].resources.map((r: { resource: string }) => r.resource)).toContain('clusterrolebindings');
  });

  it('serves a certificate valid for the listen address it was given', async () => {
    const other = await startSimApiServer({ host: '127.0.0.2' });
    try {
      expect(other.url).toMatch(/^https:\/\/127\.0\.0\.2:\d+$/);
      // The client verifies the serving certificate against the CA and the IP in the URL.
      expect((await call(other, { path: '/version' })).status).toBe(200);
    } finally {
      await other.stop();
    }
  });

  it('starts with the four system namespaces', async () => {
    const res = await call(server, { path: '/api/v1/namespaces' });
    expect(res.json.kind).toBe('NamespaceList');
    expect(res.json.items.map((n: { metadata: { name: string } }) => n.metadata.name)).toEqual(
      expect.arrayContaining(['default', 'kube-system', 'kube-public', 'kube-node-lease']),
    );
  });
});

describe('object verbs', () => {
  it('creates, refuses a duplicate with AlreadyExists, and deletes then reports NotFound', async () => {
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'verbs' },
      stringData: { password: 'hunter2' },
    };
    const created = await call(server, { method: 'POST', path: SECRETS, body: secret });
    expect(created.status).toBe(201);
    expect(created.json.data).toEqual({ password: b64('hunter2') });
    expect(created.json.type).toBe('Opaque');
    expect(created.json.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number(created.json.metadata.resourceVersion)).toBeGreaterThan(0);

    const duplicate = await call(server, { method: 'POST', path: SECRETS, body: secret });
    expect(duplicate.status).toBe(409);
    expect(duplicate.json).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'secrets "verbs" already exists',
      reason: 'AlreadyExists',
      details: { name: 'verbs', kind: 'secrets' },
      code: 409,
    });

    expect((await call(server, { method: 'DELETE', path: `${SECRETS}/verbs` })).status).toBe(200);
    const gone = await call(server, { method: 'DELETE', path: `${SECRETS}/verbs` });
    expect(gone.status).toBe(404);
    expect(gone.json).toMatchObject({
      kind: 'Status',
      reason: 'NotFound',
      message: 'secrets "verbs" not found',
      code: 404,
    });
  });

  it('rejects an update carrying a stale resourceVersion with Conflict', async () => {
    const created = await call(server, { method: 'POST', path: CONFIGMAPS, body: configMap('occ', { v: '1' }) });
    const first = { ...created.json, data: { v: '2' } };
    const updated = await call(server, { method: 'PUT', path: `${CONFIGMAPS}/occ`, body: first });
    expect(updated.status).toBe(200);
    expect(Number(updated.json.metadata.resourceVersion)).toBeGreaterThan(
      Number(created.json.metadata.resourceVersion),
    );
    const stale = await call(server, {
      method: 'PUT',
      path: `${CONFIGMAPS}/occ`,
      body: { ...created.json, data: { v: '3' } },
    });
    expect(stale.status).toBe(409);
    expect(stale.json.reason).toBe('Conflict');
    expect(stale.json.message).toContain('the object has been modified');
  });

  it('keeps the resourceVersion when an update changes nothing', async () => {
    const created = await call(server, { method: 'POST', path: CONFIGMAPS, body: configMap('same', { v: '1' }) });
    const again = await call(server, { method: 'PUT', path: `${CONFIGMAPS}/same`, body: created.json });
    expect(again.json.metadata.resourceVersion).toBe(created.json.metadata.resourceVersion);
  });

  it('refuses an object in a namespace that does not exist', async () => {
    const res = await call(server, {
      method: 'POST',
      path: '/api/v1/namespaces/nowhere/configmaps',
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } },
    });
    expect(res.status).toBe(404);
    expect(res.json.message).toBe('namespaces "nowhere" not found');
  });

  it('deletes a namespace together with its objects, but never a system namespace', async () => {
    await call(server, {
      method: 'POST',
      path: '/api/v1/namespaces',
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'doomed' } },
    });
    await call(server, {
      method: 'POST',
      path: '/api/v1/namespaces/doomed/configmaps',
      body: { ...configMap('inside', {}), metadata: { name: 'inside' } },
    });
    expect((await call(server, { method: 'DELETE', path: '/api/v1/namespaces/doomed' })).status).toBe(200);
    expect((await call(server, { path: '/api/v1/namespaces/doomed/configmaps/inside' })).status).toBe(404);
    const refused = await call(server, { method: 'DELETE', path: '/api/v1/namespaces/kube-system' });
    expect(refused.status).toBe(403);
  });

  it('filters lists by label selector (equality, set, existence) and field selector', async () => {
    await call(server, {
      method: 'POST',
      path: CONFIGMAPS,
      body: configMap('sel-a', {}, { tier: 'web', env: 'prod' }),
    });
    await call(server, { method: 'POST', path: CONFIGMAPS, body: configMap('sel-b', {}, { tier: 'db', env: 'prod' }) });
    await call(server, { method: 'POST', path: CONFIGMAPS, body: configMap('sel-c', {}, { tier: 'cache' }) });
    const names = async (query: string): Promise<string[]> => {
      const res = await call(server, { path: `${CONFIGMAPS}?${query}` });
      return res.json.items
        .map((i: { metadata: { name: string } }) => i.metadata.name)
        .filter((n: string) => n.startsWith('sel-'));
    };
    expect(await names('labelSelector=tier%3Dweb')).toEqual(['sel-a']);
    expect(await names(`labelSelector=${encodeURIComponent('tier in (db,cache)')}`)).toEqual(['sel-b', 'sel-c']);
    expect(await names(`labelSelector=${encodeURIComponent('tier notin (db),env')}`)).toEqual(['sel-a']);
    expect(await names(`labelSelector=${encodeURIComponent('!env')}`)).toEqual(['sel-c']);
    expect(await names(`labelSelector=${encodeURIComponent('env!=prod')}`)).toEqual(['sel-c']);
    expect(await names('fieldSelector=metadata.name%3Dsel-b')).toEqual(['sel-b']);
    const elsewhere = await call(server, { path: '/api/v1/configmaps?fieldSelector=metadata.namespace%3Dkube-public' });
    expect(
      elsewhere.json.items.every((i: { metadata: { namespace: string } }) => i.metadata.namespace === 'kube-public'),
    ).toBe(true);
  });
});

describe('patches and server-side apply', () => {
  it('applies merge, strategic-merge and JSON patches', async () => {
    await call(server, { method: 'POST', path: CONFIGMAPS, body: configMap('patched', { a: '1', b: '2' }) });
    const merge = await call(server, {
      method: 'PATCH',
      path: `${CONFIGMAPS}/patched`,
      body: { data: { a: null, c: '3' } },
      contentType: 'application/merge-patch+json',
    });
    expect(merge.json.data).toEqual({ b: '2', c: '3' });
    const strategic = await call(server, {
      method: 'PATCH',
      path: `${CONFIGMAPS}/patched`,
      body: { metadata: { labels: { x: 'y' } }, $patch: 'merge' },
      contentType: 'application/strategic-merge-patch+json',
    });
    expect(strategic.json.metadata.labels).toEqual({ x: 'y' });
    const json = await call(server, {
      method: 'PATCH',
      path: `${CONFIGMAPS}/patched`,
      body: [
        { op: 'test', path: '/data/b', value: '2' },
        { op: 'replace', path: '/data/b', value: 'two' },
        { op: 'remove', path: '/data/c' },
      ],
      contentType: 'application/json-patch+json',
    });
    expect(json.json.data).toEqual({ b: 'two' });
    const failed = await call(server, {
      method: 'PATCH',
      path: `${CONFIGMAPS}/patched`,
      body: [{ op: 'test', path: '/data/b', value: 'nope' }],
      contentType: 'application/json-patch+json',
    });
    expect(failed.status).toBe(400);
  });

  const apply = (name: string, manifest: unknown, manager = 'edgeadm', force = false): ReturnType<typeof call> =>
    call(server, {
      method: 'PATCH',
      path: `${CONFIGMAPS}/${name}?fieldManager=${manager}${force ? '&force=true' : ''}`,
      body: JSON.stringify(manifest),
      contentType: 'application/apply-patch+yaml',
    });

  it('creates on first apply, records the manager, and leaves a second identical apply a no-op', async () => {
    const manifest = configMap('ssa', { key: 'value' }, { app: 'demo' });
    const first = await apply('ssa', manifest);
    expect(first.status).toBe(201);
    expect(first.json.metadata.managedFields).toEqual([
      expect.objectContaining({
        manager: 'edgeadm',
        operation: 'Apply',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': { 'f:key': {} }, 'f:metadata': { 'f:labels': { 'f:app': {} } } },
      }),
    ]);
    const second = await apply('ssa', manifest);
    expect(second.status).toBe(200);
    expect(second.json.metadata.resourceVersion).toBe(first.json.metadata.resourceVersion);
    expect(second.json.metadata.managedFields).toEqual(first.json.metadata.managedFields);
  });

  it('accepts YAML, merges into fields owned by others, and drops fields the manager stopped applying', async () => {
    await apply('ssa-merge', configMap('ssa-merge', { mine: '1', old: 'x' }));
    await call(server, {
      method: 'PATCH',
      path: `${CONFIGMAPS}/ssa-merge`,
      body: { data: { theirs: 't' } },
      contentType: 'application/merge-patch+json',
    });
    const yaml = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa-merge\ndata:\n  mine: "2"\n';
    const res = await call(server, {
      method: 'PATCH',
      path: `${CONFIGMAPS}/ssa-merge?fieldManager=edgeadm`,
      body: yaml,
      contentType: 'application/apply-patch+yaml',
    });
    expect(res.json.data).toEqual({ mine: '2', theirs: 't' });
  });

  it('reports a conflict with another manager unless forced, and forcing takes the field over', async () => {
    await apply('ssa-conflict', configMap('ssa-conflict', { shared: 'a' }), 'first');
    const conflict = await apply('ssa-conflict', configMap('ssa-conflict', { shared: 'b' }), 'second');
    expect(conflict.status).toBe(409);
    expect(conflict.json.reason).toBe('Conflict');
    expect(conflict.json.details.causes).toEqual([
      { reason: 'FieldManagerConflict', message: 'conflict with "first"', field: '.data.shared' },
    ]);
    const forced = await apply('ssa-conflict', configMap('ssa-conflict', { shared: 'b' }), 'second', true);
    expect(forced.status).toBe(200);
    expect(forced.json.data.shared).toBe('b');
    expect(forced.json.metadata.managedFields.map((m: { manager: string }) => m.manager)).toEqual(['second']);
  });

  it('requires a fieldManager for apply', async () => {
    const res = await call(server, {
      method: 'PATCH',
      path: `${CONFIGMAPS}/ssa-nomanager`,
      body: JSON.stringify(configMap('ssa-nomanager', {})),
      contentType: 'application/apply-patch+yaml',
    });
    expect(res.status).toBe(400);
  });
});

describe('watch', () => {
  it('replays history after a resourceVersion and streams later changes', async () => {
    const created = await call(server, { method: 'POST', path: CONFIGMAPS, body: configMap('w1', { v: '1' }) });
    const rv = created.json.metadata.resourceVersion;
    await call(server, {
      method: 'PATCH',
      path: `${CONFIGMAPS}/w1`,
      body: { data: { v: '2' } },
      contentType: 'application/merge-patch+json',
    });
    const watch = await openStream(server, {
      path: `${CONFIGMAPS}?watch=true&resourceVersion=${rv}&fieldSelector=metadata.name%3Dw1`,
    });
    expect(watch.status).toBe(200);
    const modified = JSON.parse(await watch.next());
    expect(modified).toMatchObject({ type: 'MODIFIED', object: { metadata: { name: 'w1' }, data: { v: '2' } } });
    await call(server, { method: 'DELETE', path: `${CONFIGMAPS}/w1` });
    const deleted = JSON.parse(await watch.next());
    expect(deleted.type).toBe('DELETED');
    expect(Number(deleted.object.metadata.resourceVersion)).toBeGreaterThan(
      Number(modified.object.metadata.resourceVersion),
    );
    watch.close();
  });

  it('starts without a resourceVersion with ADDED events for what exists', async () => {
    await call(server, { method: 'POST', path: CONFIGMAPS, body: configMap('w-initial', {}, { watch: 'initial' }) });
    const watch = await openStream(server, { path: `${CONFIGMAPS}?watch=1&labelSelector=watch%3Dinitial` });
    expect(JSON.parse(await watch.next())).toMatchObject({
      type: 'ADDED',
      object: { metadata: { name: 'w-initial' } },
    });
    watch.close();
  });

  it('serves the legacy /watch/ paths', async () => {
    await call(server, { method: 'POST', path: CONFIGMAPS, body: configMap('w-legacy', {}) });
    const watch = await openStream(server, { path: '/api/v1/watch/namespaces/default/configmaps/w-legacy' });
    expect(JSON.parse(await watch.next())).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'w-legacy' } } });
    watch.close();
  });

  it('reports objects entering and leaving a label selector as ADDED and DELETED', async () => {
    await call(server, { method: 'POST', path: CONFIGMAPS, body: configMap('w-sel', {}) });
    const watch = await openStream(server, {
      path: `${CONFIGMAPS}?watch=true&labelSelector=phase%3Dlive&resourceVersion=${server.store.resourceVersion}`,
    });
    const label = (value: string | null): ReturnType<typeof call> =>
      call(server, {
        method: 'PATCH',
        path: `${CONFIGMAPS}/w-sel`,
        body: { metadata: { labels: { phase: value } } },
        contentType: 'application/merge-patch+json',
      });
    await label('live');
    expect(JSON.parse(await watch.next()).type).toBe('ADDED');
    await label(null);
    expect(JSON.parse(await watch.next())).toMatchObject({ type: 'DELETED', object: { metadata: { name: 'w-sel' } } });
    watch.close();
  });

  it('sends bookmarks when allowed, and ends at timeoutSeconds', async () => {
    const watch = await openStream(server, {
      path: `${SECRETS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=${server.store.resourceVersion}`,
    });
    const bookmark = JSON.parse(await watch.next());
    expect(bookmark).toMatchObject({ type: 'BOOKMARK', object: { kind: 'Secret', apiVersion: 'v1' } });
    expect(Number(bookmark.object.metadata.resourceVersion)).toBeGreaterThan(0);
    await watch.ended;
  });

  it('ends a watch from a compacted resourceVersion with a 410 Expired ERROR event', async () => {
    const small = await startSimApiServer({ eventHistoryLimit: 3 });
    try {
      for (let i = 0; i < 5; i++)
        small.setObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `h${i}`, namespace: 'default' } });
      const watch = await openStream(small, { path: `${CONFIGMAPS}?watch=true&resourceVersion=1` });
      const error = JSON.parse(await watch.next());
      expect(error).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
      expect(error.object.message).toMatch(/^too old resource version: 1 \(\d+\)$/);
      await watch.ended;
    } finally {
      await small.stop();
    }
  });
});

describe('authentication, impersonation and RBAC', () => {
  const whoami = (req: Omit<SimRequest, 'path'>): ReturnType<typeof call> =>
    call(server, {
      ...req,
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });

  it('refuses an unknown token with 401 and lets anyone read the version', async () => {
    const bad = await call(server, { path: SECRETS, token: 'not-a-token' });
    expect(bad.status).toBe(401);
    expect(bad.json).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
    expect((await call(server, { path: '/version', token: null })).status).toBe(200);
  });

  it('denies anonymous reads with a Forbidden Status worded like the API server', async () => {
    const res = await call(server, { path: `${SECRETS}/x`, token: null });
    expect(res.status).toBe(403);
    expect(res.json.message).toBe(
      'secrets "x" is forbidden: User "system:anonymous" cannot get resource "secrets" in API group "" in the namespace "default"',
    );
    expect((await call(server, { path: '/api', token: null })).status).toBe(403);
  });

  it('authenticates a valid bootstrap token and refuses expired or non-authentication ones', async () => {
    const tokenSecret = (id: string, data: Record<string, string>): Record<string, unknown> => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `bootstrap-token-${id}`, namespace: 'kube-system' },
      type: 'bootstrap.kubernetes.io/token',
      stringData: { 'token-id': id, 'token-secret': '0123456789abcdef', ...data },
    });
    server.setObject(
      tokenSecret('abcdef', {
        'usage-bootstrap-authentication': 'true',
        'auth-extra-groups': 'system:bootstrappers:edgeadm:default-node-token',
        expiration: new Date(Date.now() + 3_600_000).toISOString(),
      }) as never,
    );
    server.setObject(
      tokenSecret('expire', {
        'usage-bootstrap-authentication': 'true',
        expiration: new Date(Date.now() - 1000).toISOString(),
      }) as never,
    );
    server.setObject(tokenSecret('signon', { 'usage-bootstrap-signing': 'true' }) as never);
    const valid = await whoami({ token: 'abcdef.0123456789abcdef' });
    expect(valid.json.status.userInfo).toEqual({
      username: 'system:bootstrap:abcdef',
      groups: ['system:bootstrappers', 'system:bootstrappers:edgeadm:default-node-token', 'system:authenticated'],
    });
    expect((await whoami({ token: 'abcdef.0123456789abcdee' })).status).toBe(401);
    expect((await whoami({ token: 'expire.0123456789abcdef' })).status).toBe(401);
    expect((await whoami({ token: 'signon.0123456789abcdef' })).status).toBe(401);
  });

  it('authenticates client certificates signed by its CA as CN and O, and refuses others', async () => {
    const cert = await server.issueClientCertificate({ user: 'node-1', groups: ['system:nodes', 'edge'] });
    const res = await whoami({ cert });
    expect(res.json.status.userInfo).toEqual({
      username: 'node-1',
      groups: ['system:nodes', 'edge', 'system:authenticated'],
    });
    const stranger = await (
      await SimCertificateAuthority.generate('another-ca')
    ).issueClient({ user: 'mallory', groups: ['system:masters'] });
    expect((await whoami({ cert: stranger })).status).toBe(401);
  });

  it('honours impersonation by system:masters, records it, and refuses it to others', async () => {
    server.clearRequests();
    const res = await whoami({ headers: { 'Impersonate-User': 'jane', 'Impersonate-Group': ['devs', 'ops'] } });
    expect(res.json.status.userInfo).toEqual({ username: 'jane', groups: ['devs', 'ops', 'system:authenticated'] });
    const recorded = server.requests.find((r) => r.resource === 'selfsubjectreviews');
    expect(recorded).toMatchObject({
      user: 'system:admin',
      impersonatedUser: 'jane',
      impersonatedGroups: ['devs', 'ops'],
      status: 201,
    });
    expect(recorded?.headers['authorization']).toBeUndefined();
    expect(recorded?.headers['impersonate-user']).toBe('jane');
    const refused = await whoami({ token: 'alice-token', headers: { 'Impersonate-User': 'jane' } });
    expect(refused.status).toBe(403);
    expect(refused.json.message).toBe(
      'users "jane" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope',
    );
  });

  it('evaluates Role rules: verbs, resourceNames, and the binding namespace', async () => {
    server.setObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'allowed', namespace: 'kube-public' } });
    server.setObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'hidden', namespace: 'kube-public' } });
    server.setObject({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'reader', namespace: 'kube-public' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: ['allowed'], verbs: ['get'] }],
    });
    server.setObject({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'reader', namespace: 'kube-public' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'team-a' }],
    });
    expect(
      (await call(server, { path: '/api/v1/namespaces/kube-public/configmaps/allowed', token: 'alice-token' })).status,
    ).toBe(200);
    expect(
      (await call(server, { path: '/api/v1/namespaces/kube-public/configmaps/hidden', token: 'alice-token' })).status,
    ).toBe(403);
    expect(
      (await call(server, { path: '/api/v1/namespaces/kube-public/configmaps', token: 'alice-token' })).status,
    ).toBe(403);
    expect(
      (
        await call(server, {
          method: 'DELETE',
          path: '/api/v1/namespaces/kube-public/configmaps/allowed',
          token: 'alice-token',
        })
      ).status,
    ).toBe(403);
    expect(
      (await call(server, { path: '/api/v1/namespaces/kube-public/configmaps/allowed', token: 'bob-token' })).status,
    ).toBe(403);
    const review = await call(server, {
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      token: 'alice-token',
      body: {
        spec: {
          resourceAttributes: { namespace: 'kube-public', verb: 'get', resource: 'configmaps', name: 'allowed' },
        },
      },
    });
    expect(review.json.status.allowed).toBe(true);
  });
});

describe('pods: logs, exec and port-forward', () => {
  beforeAll(() => {
    server.setObject({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'worker', namespace: 'default' },
      spec: { containers: [{ name: 'main', image: 'sim' }] },
    });
  });

  it('starts pods Running with ready containers', async () => {
    const pod = await call(server, { path: '/api/v1/namespaces/default/pods/worker' });
    expect(pod.json.status).toMatchObject({ phase: 'Running', containerStatuses: [{ name: 'main', ready: true }] });
  });

  it('serves logs, tailLines, and follows appended lines until the log ends', async () => {
    server.appendPodLog('default', 'worker', 'one');
    server.appendPodLog('default', 'worker', 'two');
    expect((await call(server, { path: '/api/v1/namespaces/default/pods/worker/log' })).text).toBe('one\ntwo\n');
    expect((await call(server, { path: '/api/v1/namespaces/default/pods/worker/log?tailLines=1' })).text).toBe('two\n');
    const follow = await openStream(server, { path: '/api/v1/namespaces/default/pods/worker/log?follow=true' });
    expect(await follow.next((l) => l === 'two')).toBe('two');
    server.appendPodLog('default', 'worker', 'three');
    expect(await follow.next()).toBe('three');
    server.endPodLog('default', 'worker');
    await follow.ended;
  });

  const exec = async (
    protocols: string[],
    command: string[],
    stdin?: string,
  ): Promise<{ stdout: string; status: Record<string, unknown>; protocol: string }> => {
    const query = [
      ...command.map((c) => `command=${encodeURIComponent(c)}`),
      'stdout=true',
      'stderr=true',
      ...(stdin !== undefined ? ['stdin=true'] : []),
    ].join('&');
    const ws = await connectWebSocket({
      url: `${server.url}/api/v1/namespaces/default/pods/worker/exec?${query}`,
      protocols,
      ca: server.caPem,
      headers: { Authorization: `Bearer ${server.adminToken}` },
    });
    let stdout = '';
    let status: Record<string, unknown> = {};
    ws.on('message', (data) => {
      if (data[0] === 1) stdout += data.subarray(1).toString();
      if (data[0] === 3) status = JSON.parse(data.subarray(1).toString());
    });
    const closed = once(ws, 'close');
    if (stdin !== undefined) {
      ws.send(Buffer.concat([Buffer.of(0), Buffer.from(stdin)]));
      ws.send(Buffer.of(255, 0));
    }
    await closed;
    return { stdout, status, protocol: ws.protocol };
  };

  it('runs cat over v5.channel.k8s.io until the client closes stdin', async () => {
    const result = await exec(['v5.channel.k8s.io', 'v4.channel.k8s.io'], ['cat'], 'round trip\n');
    expect(result).toEqual({
      stdout: 'round trip\n',
      status: { metadata: {}, status: 'Success' },
      protocol: 'v5.channel.k8s.io',
    });
  });

  it('reports a non-zero exit code on the error channel over v4.channel.k8s.io', async () => {
    const result = await exec(['v4.channel.k8s.io'], ['sh', '-c', 'echo before; exit 7; echo after']);
    expect(result.protocol).toBe('v4.channel.k8s.io');
    expect(result.stdout).toBe('before\n');
    expect(result.status).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '7' }] },
    });
  });

  it('forwards a pod port over the WebSocket channel protocol with the port prefix on each channel', async () => {
    const echo: Server = createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    server.setPortForward('default', 'worker', 8080, { host: '127.0.0.1', port: (echo.address() as AddressInfo).port });
    const ws = await connectWebSocket({
      url: `${server.url}/api/v1/namespaces/default/pods/worker/portforward?ports=8080`,
      protocols: ['v4.channel.k8s.io'],
      ca: server.caPem,
      headers: { Authorization: `Bearer ${server.adminToken}` },
    });
    const messages: Buffer[] = [];
    let received = '';
    const echoed = new Promise<void>((resolve) => {
      ws.on('message', (data) => {
        messages.push(data);
        if (data[0] === 0 && messages.filter((m) => m[0] === 0).length > 1) received += data.subarray(1).toString();
        if (received === 'ping over the tunnel') resolve();
      });
    });
    ws.send(Buffer.concat([Buffer.of(0), Buffer.from('ping over the tunnel')]));
    await echoed;
    const port = Buffer.alloc(2);
    port.writeUInt16LE(8080);
    expect(messages.slice(0, 2)).toEqual([Buffer.concat([Buffer.of(0), port]), Buffer.concat([Buffer.of(1), port])]);
    ws.close();
    echo.close();
  });
});

describe('test controls', () => {
  it('kills and restarts on the same port with the same CA and objects, dropping open watches', async () => {
    const port = server.port;
    server.setObject(configMap('survivor', { kept: 'yes' }) as never);
    const watch = await openStream(server, {
      path: `${CONFIGMAPS}?watch=true&resourceVersion=${server.store.resourceVersion}`,
    });
    await server.kill();
    expect(server.isRunning).toBe(false);
    await watch.ended;
    await expect(call(server, { path: '/version' })).rejects.toThrow(/ECONNREFUSED/);
    await server.restart();
    expect(server.port).toBe(port);
    const survivor = await call(server, { path: `${CONFIGMAPS}/survivor` });
    expect(survivor.json.data).toEqual({ kept: 'yes' });
  });

  it('counts requests by verb, refusals, open watches and streaming sessions', async () => {
    const before = structuredClone(server.counters);
    await call(server, { path: SECRETS, token: 'not-a-token' });
    await call(server, { path: SECRETS, token: null });
    const watch = await openStream(server, {
      path: `${SECRETS}?watch=true&resourceVersion=${server.store.resourceVersion}`,
    });
    expect(server.counters.watchesActive).toBe(before.watchesActive + 1);
    watch.close();
    await watch.ended;
    await expect.poll(() => server.counters.watchesActive).toBe(before.watchesActive);
    expect(server.counters.unauthorized).toBe(before.unauthorized + 1);
    expect(server.counters.forbidden).toBe(before.forbidden + 1);
    expect(server.counters.byVerb['list']).toBe((before.byVerb['list'] ?? 0) + 2);
    expect(server.counters.watchesStarted).toBe(before.watchesStarted + 1);
    // The exec and port-forward tests above went through the upgrade paths.
    expect(server.counters.execSessions).toBeGreaterThanOrEqual(2);
    expect(server.counters.portForwardSessions).toBeGreaterThanOrEqual(1);
  });

  it('holds requests while paused and answers them on resume', async () => {
    // The server's own events (Node's HTTP diagnostics channels), not a delay: the request has arrived,
    // the server has run all it could for it, and it has written no answer until resume.
    const path = '/version?held=1';
    const events: string[] = [];
    let onArrived!: () => void;
    const isArrived = new Promise<void>((resolve) => (onArrived = resolve));
    const onStart = (message: unknown): void => {
      if ((message as { request: IncomingMessage }).request.url !== path) return;
      events.push('arrived');
      onArrived();
    };
    const onFinish = (message: unknown): void => {
      if ((message as { request: IncomingMessage }).request.url === path) events.push('answered');
    };
    subscribe('http.server.request.start', onStart);
    subscribe('http.server.response.finish', onFinish);
    try {
      server.pause();
      const pending = call(server, { path });
      await isArrived;
      for (let turn = 0; turn < 5; turn += 1) await new Promise((resolve) => setImmediate(resolve));
      expect(events).toEqual(['arrived']);
      events.push('resumed');
      server.resume();
      expect((await pending).status).toBe(200);
      await expect.poll(() => events).toEqual(['arrived', 'resumed', 'answered']);
    } finally {
      unsubscribe('http.server.request.start', onStart);
      unsubscribe('http.server.response.finish', onFinish);
    }
  });
});
