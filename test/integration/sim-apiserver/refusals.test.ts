/**
 * What the simulated API server refuses as the real one does: requests
 * without credentials when anonymous access is off (k3s), and bootstrap
 * tokens whose extra groups or expiry kube-apiserver would not accept; and
 * k3s's `/cacerts`, served before authentication with the file's exact bytes.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapTokenSecret } from '../../../src/trust/bootstrap-token.js';
import { startSimApiServer } from '../../support/sim-apiserver/index.js';
import type { SimApiServer } from '../../support/sim-apiserver/index.js';
import { upgradeStatus } from '../../support/https-client.js';
import { call } from './http-client.js';

const WHOAMI = '/apis/authentication.k8s.io/v1/selfsubjectreviews';
const SECRET = '0123456789abcdef';

let dir: string;
let server: SimApiServer;
/** Odd bytes on purpose: no final newline after a blank line, so any re-encoding shows. */
let caCertsBytes: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sim-apiserver-refusals-'));
  server = await startSimApiServer({ anonymousAuth: false, caCertsFile: join(dir, 'server-ca.crt') });
  caCertsBytes = `${server.caPem.trimEnd()}\n\n# served as is`;
  await writeFile(join(dir, 'server-ca.crt'), caCertsBytes);
});

afterAll(async () => {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
});

function whoami(token: string | null): ReturnType<typeof call> {
  return call(server, {
    method: 'POST',
    path: WHOAMI,
    token,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
}

function setBootstrapToken(id: string, data: Record<string, string>): void {
  server.setObject({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `bootstrap-token-${id}`, namespace: 'kube-system' },
    type: 'bootstrap.kubernetes.io/token',
    stringData: { 'token-id': id, 'token-secret': SECRET, 'usage-bootstrap-authentication': 'true', ...data },
  } as never);
}

describe('with anonymous access off (--anonymous-auth=false, as k3s)', () => {
  it('answers 401 Unauthorized to requests without credentials, on every path', async () => {
    for (const path of ['/api/v1/namespaces/kube-public/configmaps/cluster-info', '/version', '/readyz', '/api']) {
      const res = await call(server, { path, token: null });
      expect(res.status, path).toBe(401);
      expect(res.json).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'Unauthorized', code: 401 });
    }
  });

  it('treats a non-Bearer Authorization header as no credentials: 401 too', async () => {
    const res = await call(server, { path: '/version', token: null, headers: { Authorization: 'Basic YTpi' } });
    expect(res.status).toBe(401);
  });

  it('still serves authenticated callers', async () => {
    expect((await call(server, { path: '/version' })).status).toBe(200);
  });

  it('serves /cacerts to anyone, before authentication, with the file bytes exactly', async () => {
    const res = await call(server, { path: '/cacerts', token: null });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain');
    expect(res.text).toBe(caCertsBytes);
  });
});

describe('bootstrap tokens, checked as kube-apiserver checks them', () => {
  it('accepts extra groups that match the bootstrap group pattern, deduplicated and sorted', async () => {
    setBootstrapToken('group1', {
      'auth-extra-groups':
        'system:bootstrappers:zeta,system:bootstrappers:kubeadm:default-node-token,system:bootstrappers:zeta',
    });
    const res = await whoami(`group1.${SECRET}`);
    expect(res.status).toBe(201);
    expect(res.json.status.userInfo).toEqual({
      username: 'system:bootstrap:group1',
      groups: [
        'system:bootstrappers',
        'system:bootstrappers:kubeadm:default-node-token',
        'system:bootstrappers:zeta',
        'system:authenticated',
      ],
    });
  });

  it.each([
    ['the bare default group', 'system:bootstrappers'],
    ['a group outside system:bootstrappers:', 'system:masters'],
    ['a space after the comma', 'system:bootstrappers:a, system:bootstrappers:b'],
    ['an empty entry', 'system:bootstrappers:a,'],
    ['a group ending in a colon', 'system:bootstrappers:a:'],
    ['an upper-case group', 'system:bootstrappers:Edge'],
  ])('refuses a token with %s in auth-extra-groups (401)', async (_, groups) => {
    setBootstrapToken('badgrp', { 'auth-extra-groups': groups });
    expect((await whoami(`badgrp.${SECRET}`)).status).toBe(401);
  });

  it('refuses a token whose expiration is not RFC 3339 (treated as expired)', async () => {
    const tomorrow = new Date(Date.now() + 86_400_000);
    setBootstrapToken('notrfc', { expiration: tomorrow.toUTCString() });
    expect((await whoami(`notrfc.${SECRET}`)).status).toBe(401);
    setBootstrapToken('isrfc3', { expiration: tomorrow.toISOString() });
    expect((await whoami(`isrfc3.${SECRET}`)).status).toBe(201);
  });
});

describe("k3s's agent start-up endpoints (--k3s-agent-certificates)", () => {
  let k3s: SimApiServer;
  beforeAll(async () => {
    k3s = await startSimApiServer({ anonymousAuth: false, k3sAgentCertificates: true });
    k3s.setObject({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'bootstrap-token-agent1', namespace: 'kube-system' },
      type: 'bootstrap.kubernetes.io/token',
      stringData: { 'token-id': 'agent1', 'token-secret': SECRET, 'usage-bootstrap-authentication': 'true' },
    } as never);
    k3s.addToken('not-an-agent', { user: 'jane', groups: ['devs'] });
  });
  afterAll(async () => {
    await k3s.stop();
  });
  const path = '/v1-k3s/client-kubelet.crt';
  const headers = { 'k3s-Node-Name': 'edge-1', 'k3s-Node-Password': 'a1b2', 'k3s-Node-IP': '10.0.0.7' };
  /** What k3s's agent asks at every start (k3s pkg/agent/config/config.go, `get`). */
  const startPaths = [
    '/v1-k3s/config',
    '/v1-k3s/client-ca.crt',
    '/v1-k3s/server-ca.crt',
    '/v1-k3s/serving-kubelet.crt',
    '/v1-k3s/client-kubelet.crt',
    '/v1-k3s/client-kube-proxy.crt',
    '/v1-k3s/client-k3s-controller.crt',
  ];

  it('refuses callers without credentials (401) and callers outside the agent roles (403), on every start-up path', async () => {
    for (const startPath of startPaths) {
      expect((await call(k3s, { path: startPath, token: null, headers })).status, startPath).toBe(401);
      expect((await call(k3s, { path: startPath, token: 'not-an-agent', headers })).status, startPath).toBe(403);
      expect((await call(k3s, { path: startPath, token: `agent1.${SECRET}`, headers })).status, startPath).toBe(200);
    }
  });

  it("refuses a node's certificates without its name (400) or its password (403), as k3s's node-named paths do", async () => {
    for (const startPath of ['/v1-k3s/serving-kubelet.crt', '/v1-k3s/client-kubelet.crt']) {
      const token = `agent1.${SECRET}`;
      expect((await call(k3s, { path: startPath, token, headers: { 'k3s-Node-Password': 'a1b2' } })).status).toBe(400);
      expect((await call(k3s, { path: startPath, token, headers: { 'k3s-Node-Name': 'edge-1' } })).status).toBe(403);
    }
  });

  it("lets a node in with its own certificate (an agent's later starts) and not kube-proxy's", async () => {
    const token = `agent1.${SECRET}`;
    const pair = (text: string) => {
      const blocks = text.match(/-----BEGIN [A-Z ]+-----[\s\S]*?-----END [A-Z ]+-----/g) ?? [];
      return { certPem: blocks[0]!, keyPem: blocks.find((b) => b.includes('PRIVATE KEY'))! };
    };
    const node = pair((await call(k3s, { path, token, headers })).text);
    const kubeProxy = pair((await call(k3s, { path: '/v1-k3s/client-kube-proxy.crt', token })).text);
    expect((await call(k3s, { path: '/v1-k3s/config', token: null, cert: node })).status).toBe(200);
    expect((await call(k3s, { path: '/v1-k3s/config', token: null, cert: kubeProxy })).status).toBe(403);
  });

  it('opens the agent tunnel (/v1-k3s/connect) to a node only, as k3s allows it to system:nodes alone', async () => {
    const token = `agent1.${SECRET}`;
    const pair = (text: string) => {
      const blocks = text.match(/-----BEGIN [A-Z ]+-----[\s\S]*?-----END [A-Z ]+-----/g) ?? [];
      return { certPem: blocks[0]!, keyPem: blocks.find((b) => b.includes('PRIVATE KEY'))! };
    };
    const node = pair((await call(k3s, { path, token, headers })).text);
    const target = { url: k3s.url, caPem: k3s.caPem };
    const websocket = {
      upgrade: 'websocket',
      'sec-websocket-version': '13',
      'sec-websocket-key': 'c2ltLWszcy10dW5uZWw=',
    };
    expect(await upgradeStatus(target, { path: '/v1-k3s/connect', cert: node, headers: websocket })).toBe(101);
    // A bootstrap token may fetch certificates but is not a node: no tunnel.
    expect(await upgradeStatus(target, { path: '/v1-k3s/connect', token, headers: websocket })).toBe(403);
    expect(await upgradeStatus(target, { path: '/v1-k3s/connect', headers: websocket })).toBe(401);
  });

  it('issues a bootstrap token a client certificate that acts as system:node:<name>, not as the token', async () => {
    const issued = await call(k3s, { path, token: `agent1.${SECRET}`, headers });
    expect(issued.status).toBe(200);
    const blocks = issued.text.match(/-----BEGIN [A-Z ]+-----[\s\S]*?-----END [A-Z ]+-----/g) ?? [];
    const cert = { certPem: blocks[0]!, keyPem: blocks.find((b) => b.includes('PRIVATE KEY'))! };
    const res = await call(k3s, {
      method: 'POST',
      path: WHOAMI,
      cert,
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    expect(res.json.status.userInfo).toEqual({
      username: 'system:node:edge-1',
      groups: ['system:nodes', 'system:authenticated'],
    });
  });
});

describe('bootstrap-token groups: the simulation and edgeadm agree (generated groups)', () => {
  it('a token authenticates exactly when edgeadm would accept its extra group', async () => {
    const groupChars = fc.constantFrom(...'abcz09:-_ .ABS'.split(''));
    const group = fc.oneof(
      fc.string({ unit: groupChars, maxLength: 12 }).map((suffix) => `system:bootstrappers:${suffix}`),
      fc.string({ unit: groupChars, maxLength: 30 }),
      fc.constantFrom('system:bootstrappers', 'system:bootstrappers:', 'system:bootstrappers:a'),
    );
    let index = 0;
    await fc.assert(
      fc.asyncProperty(group, async (candidate) => {
        // An empty auth-extra-groups means no extra group to both (edgeadm then writes no key at all).
        fc.pre(candidate !== '');
        const id = `pg${String(index++).padStart(4, '0')}`;
        let isAcceptedByEdgeadm = true;
        try {
          bootstrapTokenSecret({ token: { id, secret: SECRET }, groups: [candidate] });
        } catch {
          isAcceptedByEdgeadm = false;
        }
        setBootstrapToken(id, { 'auth-extra-groups': candidate });
        const status = (await whoami(`${id}.${SECRET}`)).status;
        expect(status === 201, `group ${JSON.stringify(candidate)}`).toBe(isAcceptedByEdgeadm);
      }),
      { numRuns: 60 },
    );
  });
});
