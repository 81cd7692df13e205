/**
 * The operator API's input checks, against the real handlers and the real
 * store (SQLite in memory) and PKI: numbers and encodings in bodies and
 * paths are answered 400 (never a 500), and a hub token is spent only by a
 * registration that succeeds.
 */
import { mkdtempSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreHealth } from '../../../../src/hub/store/coordination.js';
import type { HubContext } from '../../../../src/hub/api/hub-context.js';
import { HUB_ADMIN_USER } from '../../../../src/hub/identity/authenticate.js';
import { LocalCoordination } from '../../../../src/hub/store/local-coordination.js';
import { ensureHubPki } from '../../../../src/hub/identity/hub-pki.js';
import { formatHubToken, hashUserToken, newHubToken, newUserToken } from '../../../../src/hub/identity/hub-tokens.js';
import { HttpError } from '../../../../src/hub/http/http-replies.js';
import { MAX_API_TTL_MS, MAX_HUB_TOKEN_USAGES } from '../../../../src/hub/limits.js';
import { AGENT_CERT_ORGANIZATION } from '../../../../src/hub/contract/agent-certificate.js';
import { HubMetrics } from '../../../../src/hub/metrics/hub-metrics.js';
import { serveApi } from '../../../../src/hub/api/operator-api.js';
import { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import { createCsr } from '../../../../src/trust/pki.js';

/** What one call of the API gave: the status it answered, or the error that would have been a 500. */
interface Answer {
  status: number;
  body: string;
  /** A throw that is not an HttpError: the hub answers it 500. */
  crash?: unknown;
}

let context: HubContext;
let store: SqliteHubStore;
const adminToken = newUserToken();

/** Calls the API as the hub's request handler does: an HttpError is its status, anything else a 500. */
async function call(method: string, url: string, options: { token?: string; body?: string } = {}): Promise<Answer> {
  const body = options.body === undefined ? [] : [Buffer.from(options.body, 'utf8')];
  const req = Object.assign(Readable.from(body), {
    method,
    url,
    headers: {
      ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
      ...(options.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(options.body)) }),
    },
    socket: {},
  }) as unknown as IncomingMessage;
  const answer: Answer = { status: 0, body: '' };
  const res = {
    headersSent: false,
    writeHead(status: number) {
      answer.status = status;
      return res;
    },
    end(text?: string) {
      answer.body = text ?? '';
    },
  } as unknown as ServerResponse;
  try {
    const isServed = await serveApi(context, req, res);
    if (!isServed) answer.status = 404;
  } catch (error) {
    if (error instanceof HttpError) {
      answer.status = error.status;
      answer.body = JSON.stringify({ code: error.code, message: error.message });
    } else {
      answer.status = 500;
      answer.crash = error;
    }
  }
  return answer;
}

async function hubToken(options: { usages?: number; ttlMs?: number } = {}): Promise<string> {
  const { record } = newHubToken({ ttlMs: options.ttlMs ?? 60_000, ...options });
  await store.addToken(record);
  return formatHubToken(record);
}

async function csrFor(cluster: string): Promise<string> {
  return (await createCsr({ commonName: cluster, organizations: [AGENT_CERT_ORGANIZATION] })).csrPem;
}

beforeAll(async () => {
  store = await SqliteHubStore.open(':memory:');
  const pki = await ensureHubPki({ dataDir: mkdtempSync(join(tmpdir(), 'hub-api-')), names: ['127.0.0.1'] });
  await store.putUser({
    name: HUB_ADMIN_USER,
    tokenHash: hashUserToken(adminToken),
    clustersSelector: '',
    groups: [],
    isAdmin: true,
    createdAt: new Date().toISOString(),
  });
  context = {
    store,
    pki,
    metrics: new HubMetrics(),
    logger: silentLogger,
    now: () => new Date(),
    advertiseUrl: 'https://127.0.0.1:9443',
    tunnels: new Map(),
    closeTunnel: () => {},
  };
});

afterAll(async () => {
  await store?.close();
});

describe('operator API: numbers and encodings', () => {
  const cases: { name: string; method: string; url: string; body?: string; field: RegExp }[] = [
    { name: 'ttlMs 1e308', method: 'POST', url: '/hub/v1/tokens', body: '{"ttlMs":1e308}', field: /ttlMs/ },
    {
      name: 'ttlMs past the bound',
      method: 'POST',
      url: '/hub/v1/tokens',
      body: `{"ttlMs":${MAX_API_TTL_MS + 1}}`,
      field: /ttlMs/,
    },
    { name: 'ttlMs negative', method: 'POST', url: '/hub/v1/tokens', body: '{"ttlMs":-1}', field: /ttlMs/ },
    { name: 'ttlMs fractional', method: 'POST', url: '/hub/v1/tokens', body: '{"ttlMs":1.5}', field: /ttlMs/ },
    { name: 'ttlMs a string', method: 'POST', url: '/hub/v1/tokens', body: '{"ttlMs":"60000"}', field: /ttlMs/ },
    { name: 'usages 1e300', method: 'POST', url: '/hub/v1/tokens', body: '{"usages":1e300}', field: /usages/ },
    {
      name: 'usages past the bound',
      method: 'POST',
      url: '/hub/v1/tokens',
      body: `{"usages":${MAX_HUB_TOKEN_USAGES + 1}}`,
      field: /usages/,
    },
    { name: 'usages 0', method: 'POST', url: '/hub/v1/tokens', body: '{"usages":0}', field: /usages/ },
    {
      name: 'user ttlMs 1e308',
      method: 'POST',
      url: '/hub/v1/users',
      body: '{"name":"u1","clustersSelector":"env=dev","ttlMs":1e308}',
      field: /ttlMs/,
    },
    {
      name: 'truncated escape in a cluster name',
      method: 'GET',
      url: '/hub/v1/clusters/%E0%A4%A',
      field: /percent-encoded/,
    },
    { name: 'escape of a non-UTF-8 byte', method: 'GET', url: '/hub/v1/clusters/%FF', field: /percent-encoded/ },
    { name: 'not an escape', method: 'DELETE', url: '/hub/v1/clusters/%zz', field: /percent-encoded/ },
    { name: 'a name that is no cluster name', method: 'GET', url: '/hub/v1/clusters/a%2Fb', field: /cluster name/ },
    {
      name: 'a selector that is no selector',
      method: 'GET',
      url: '/hub/v1/clusters?selector=%E0%A4%A',
      field: /selector/,
    },
  ];
  for (const entry of cases) {
    it(`answers 400 to ${entry.name}, naming what is wrong`, async () => {
      const answer = await call(entry.method, entry.url, {
        token: adminToken,
        ...(entry.body === undefined ? {} : { body: entry.body }),
      });
      expect(answer.crash).toBeUndefined();
      expect(answer.status).toBe(400);
      expect(answer.body).toMatch(entry.field);
    });
  }

  it('still takes the largest lifetime and usage count it allows', async () => {
    const answer = await call('POST', '/hub/v1/tokens', {
      token: adminToken,
      body: JSON.stringify({ ttlMs: MAX_API_TTL_MS, usages: MAX_HUB_TOKEN_USAGES }),
    });
    expect(answer.status).toBe(201);
  });

  it('refuses registration labels that are not Kubernetes labels', async () => {
    const token = await hubToken();
    for (const labels of [['env'], { 'a b': 'x' }, { env: 'dev\nx' }, { env: 7 }, { ['k'.repeat(64)]: 'v' }]) {
      const answer = await call('POST', '/hub/v1/register', {
        token,
        body: JSON.stringify({ name: 'labelled', labels, csr: await csrFor('labelled') }),
      });
      expect(answer.status, JSON.stringify(labels)).toBe(400);
    }
    expect(await store.getCluster('labelled')).toBeUndefined();
  });

  it('registers with a label-limited token only clusters whose labels are within its limit (issue #30)', async () => {
    const created = await call('POST', '/hub/v1/tokens', {
      token: adminToken,
      body: JSON.stringify({ ttlMs: 60_000, labels: { env: 'dev', site: '*' } }),
    });
    expect(created.status).toBe(201);
    expect(JSON.parse(created.body)).toMatchObject({ labels: { env: 'dev', site: '*' } });
    const token = (JSON.parse(created.body) as { token: string }).token;
    const refusals: [Record<string, string>, RegExp][] = [
      [{ env: 'prod', site: 'a' }, /label env="prod" is not allowed \(this token allows env=dev\)/],
      [{ env: 'dev' }, /label "site" is required by this token/],
      [{ env: 'dev', site: 'a', team: 'payments' }, /label "team" is not one this token allows/],
    ];
    for (const [labels, message] of refusals) {
      const answer = await call('POST', '/hub/v1/register', {
        token,
        body: JSON.stringify({ name: 'limited', labels, csr: await csrFor('limited') }),
      });
      expect(answer.status, JSON.stringify(labels)).toBe(403);
      expect(JSON.parse(answer.body)).toMatchObject({
        code: 'E_HUB_TOKEN_LABELS',
        message: expect.stringMatching(message),
      });
    }
    expect(await store.getCluster('limited')).toBeUndefined();
    const within = await call('POST', '/hub/v1/register', {
      token,
      body: JSON.stringify({ name: 'limited', labels: { env: 'dev', site: 'shop-7' }, csr: await csrFor('limited') }),
    });
    expect(within.status).toBe(201);
    expect((await store.getCluster('limited'))?.labels).toEqual({ env: 'dev', site: 'shop-7' });
    const bad = await call('POST', '/hub/v1/tokens', {
      token: adminToken,
      body: JSON.stringify({ ttlMs: 60_000, labels: { env: 'a b' } }),
    });
    expect(bad.status).toBe(400);
  });

  it('answers random JSON bodies and paths with anything but a 500', async () => {
    const token = await hubToken({ usages: MAX_HUB_TOKEN_USAGES });
    const routes = ['/hub/v1/tokens', '/hub/v1/users', '/hub/v1/register', '/hub/v1/renew'];
    const field = fc.constantFrom('ttlMs', 'usages', 'name', 'labels', 'csr', 'clustersSelector', 'groups');
    const body = fc.oneof(
      fc.dictionary(field, fc.jsonValue()).map((value) => JSON.stringify(value)),
      fc.json(),
      fc.string(),
    );
    const segment = fc.oneof(
      fc.string({ unit: 'grapheme' }),
      fc.stringMatching(/^(%[0-9A-Fa-fzZ]{0,2}|[a-z0-9./-])*$/),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        body,
        fc.constantFrom(adminToken, token),
        async (route, text, bearer) => {
          const answer = await call('POST', route, { token: bearer, body: text });
          expect(answer.crash).toBeUndefined();
          expect(answer.status).not.toBe(500);
        },
      ),
      { numRuns: 300 },
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('GET', 'DELETE', 'PUT'), segment, fc.string(), async (method, name, query) => {
        const url = `/hub/v1/clusters/${name}?selector=${query}`;
        const answer = await call(method, url, { token: adminToken });
        expect(answer.crash, url).toBeUndefined();
        expect(answer.status, url).not.toBe(500);
      }),
      { numRuns: 300 },
    );
  });
});

describe('operator API: a hub token is spent only by a registration that succeeds', () => {
  it('leaves a single-use token unspent when the CSR is garbage, the name taken or the labels wrong', async () => {
    const token = await hubToken({ usages: 1 });
    await store.addCluster({
      name: 'taken',
      labels: {},
      certSerial: '01',
      certNotAfter: new Date().toISOString(),
      registeredAt: new Date().toISOString(),
    });
    const refused = [
      await call('POST', '/hub/v1/register', { token, body: '{"name":"edge-1","csr":"garbage"}' }),
      await call('POST', '/hub/v1/register', {
        token,
        body: JSON.stringify({ name: 'edge-1', csr: await csrFor('other') }),
      }),
      await call('POST', '/hub/v1/register', {
        token,
        body: JSON.stringify({ name: 'taken', csr: await csrFor('taken') }),
      }),
      await call('POST', '/hub/v1/register', {
        token,
        body: JSON.stringify({ name: 'edge-1', labels: { 'a b': 'c' }, csr: await csrFor('edge-1') }),
      }),
    ];
    expect(refused.map((answer) => answer.status)).toEqual([400, 400, 409, 400]);
    const ok = await call('POST', '/hub/v1/register', {
      token,
      body: JSON.stringify({ name: 'edge-1', csr: await csrFor('edge-1') }),
    });
    expect(ok.status, ok.body).toBe(201);
    const spent = await call('POST', '/hub/v1/register', {
      token,
      body: JSON.stringify({ name: 'edge-2', csr: await csrFor('edge-2') }),
    });
    expect(spent.status).toBe(401);
    expect(spent.body).toContain('E_HUB_TOKEN_SPENT');
  });

  it('lets exactly one of many concurrent registrations use a single-use token', async () => {
    const token = await hubToken({ usages: 1 });
    const names = ['race-1', 'race-2', 'race-3', 'race-4', 'race-5'];
    const csrs = await Promise.all(names.map(csrFor));
    const answers = await Promise.all(
      names.map((name, i) => call('POST', '/hub/v1/register', { token, body: JSON.stringify({ name, csr: csrs[i] }) })),
    );
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1);
    expect(answers.filter((answer) => answer.status === 401 && answer.body.includes('E_HUB_TOKEN_SPENT'))).toHaveLength(
      4,
    );
    const registered = (await store.listClusters()).filter((cluster) => cluster.name.startsWith('race-'));
    expect(registered).toHaveLength(1);
  });

  it('lets exactly one of two concurrent registrations of one name use a token, and keeps the other use', async () => {
    const token = await hubToken({ usages: 2 });
    const csrs = await Promise.all([csrFor('twin'), csrFor('twin')]);
    const answers = await Promise.all(
      csrs.map((csr) => call('POST', '/hub/v1/register', { token, body: JSON.stringify({ name: 'twin', csr }) })),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409]);
    const again = await call('POST', '/hub/v1/register', {
      token,
      body: JSON.stringify({ name: 'twin-2', csr: await csrFor('twin-2') }),
    });
    expect(again.status).toBe(201);
  });
});

describe('operator API: /readyz follows the coordination’s health', () => {
  it('answers 503 naming the cause while the store refuses changes, though reads still answer; 200 when healthy', async () => {
    const coordination = new LocalCoordination({
      id: 'r1',
      peerUrl: '',
      advertiseUrl: '',
      startedAt: new Date().toISOString(),
    });
    let health: StoreHealth = { state: 'unavailable', cause: 'etcd has no quorum', since: '2026-01-01T00:00:00Z' };
    coordination.health = () => health;
    const saved = context.coordination;
    context.coordination = coordination;
    try {
      const sick = await call('GET', '/readyz');
      expect(sick.status).toBe(503);
      expect(JSON.parse(sick.body)).toMatchObject({ code: 'E_HUB_STORE_UNAVAILABLE' });
      expect(sick.body).toContain('etcd has no quorum');
      health = { state: 'ok' };
      expect((await call('GET', '/readyz')).status).toBe(200);
    } finally {
      if (saved === undefined) delete context.coordination;
      else context.coordination = saved;
    }
  });
});

describe('operator API: tokens and users, listed without secrets and deleted', () => {
  it('lists tokens without their secrets; a deleted token registers nothing and leaves the list', async () => {
    const created = await call('POST', '/hub/v1/tokens', {
      token: adminToken,
      body: JSON.stringify({ ttlMs: 60_000, usages: 2, labels: { env: 'dev' } }),
    });
    const { token, id } = JSON.parse(created.body) as { token: string; id: string };
    const secret = token.split('.')[1]!;
    const listed = await call('GET', '/hub/v1/tokens', { token: adminToken });
    expect(listed.status).toBe(200);
    expect(listed.body).not.toContain(secret);
    expect((JSON.parse(listed.body) as { tokens: unknown[] }).tokens).toContainEqual({
      id,
      createdAt: expect.any(String),
      expiresAt: expect.any(String),
      usagesLeft: 2,
      labels: { env: 'dev' },
      state: 'usable',
    });
    expect((await call('DELETE', `/hub/v1/tokens/${id}`, { token: adminToken })).body).toBe(
      JSON.stringify({ id, isDeleted: true }),
    );
    const after = JSON.parse((await call('GET', '/hub/v1/tokens', { token: adminToken })).body) as {
      tokens: { id: string }[];
    };
    expect(after.tokens.map((t) => t.id)).not.toContain(id);
    const register = await call('POST', '/hub/v1/register', {
      token,
      body: JSON.stringify({ name: 'after-revoke', labels: { env: 'dev' }, csr: await csrFor('after-revoke') }),
    });
    expect(register.status).toBe(401);
    expect(await store.getCluster('after-revoke')).toBeUndefined();
    const again = await call('DELETE', `/hub/v1/tokens/${id}`, { token: adminToken });
    expect([again.status, JSON.parse(again.body).code]).toEqual([404, 'E_HUB_TOKEN_NOT_FOUND']);
  });

  it("lists users without tokens; a deleted user's token stops working; the admin cannot be deleted", async () => {
    const created = await call('POST', '/hub/v1/users', {
      token: adminToken,
      body: JSON.stringify({ name: 'carol', clustersSelector: 'env=dev', groups: ['dev-team'] }),
    });
    const carolToken = (JSON.parse(created.body) as { token: string }).token;
    const listed = await call('GET', '/hub/v1/users', { token: adminToken });
    expect(listed.body).not.toContain(carolToken);
    expect(listed.body).not.toContain(hashUserToken(carolToken));
    expect((JSON.parse(listed.body) as { users: unknown[] }).users).toContainEqual({
      name: 'carol',
      clustersSelector: 'env=dev',
      groups: ['dev-team'],
      isAdmin: false,
      createdAt: expect.any(String),
      state: 'active',
    });
    // A scoped user manages no one, not even themselves.
    for (const [method, url] of [
      ['GET', '/hub/v1/users'],
      ['GET', '/hub/v1/tokens'],
      ['DELETE', '/hub/v1/users/carol'],
      ['DELETE', `/hub/v1/users/${HUB_ADMIN_USER}`],
    ] as const) {
      expect((await call(method, url, { token: carolToken })).status, `${method} ${url}`).toBe(403);
    }
    expect((await call('GET', '/hub/v1/users')).status).toBe(401);
    const admin = await call('DELETE', `/hub/v1/users/${HUB_ADMIN_USER}`, { token: adminToken });
    expect([admin.status, JSON.parse(admin.body).code]).toEqual([409, 'E_HUB_USER_ADMIN']);
    expect((await call('DELETE', '/hub/v1/users/carol', { token: adminToken })).status).toBe(200);
    // Known (403, not an admin) before; unknown (401) after.
    expect((await call('GET', '/hub/v1/users', { token: carolToken })).status).toBe(401);
    const gone = await call('DELETE', '/hub/v1/users/carol', { token: adminToken });
    expect([gone.status, JSON.parse(gone.body).code]).toEqual([404, 'E_HUB_USER_NOT_FOUND']);
    expect((await call('DELETE', '/hub/v1/users/%E0%A4%A', { token: adminToken })).status).toBe(400);
    expect((await call('PUT', '/hub/v1/users/carol', { token: adminToken })).status).toBe(405);
  });
});
