/**
 * The edge-proxy's k3s supervisor answers (`--k3s-supervisor`,
 * src/edge/k3s-supervisor.ts) against the SIMULATED API server (not k3s),
 * which serves the supervisor paths a k3s agent asks at every start as
 * k3s's router does (test/support/sim-apiserver): online they are
 * forwarded with the caller's credentials and kept; offline they are
 * answered only to the same credentials, node name and node password. The
 * proxy answers `/v1-k3s/apiservers` with its own address; offline it holds
 * the `/v1-k3s/connect` tunnel and answers `/readyz` for the node's own
 * kubelet certificate only, and lets the tunnel go when the server is back;
 * online the tunnel is the server's, forwarded. Every other `/v1-k3s/` path
 * is refused offline.
 *
 * The proxy serves, as join makes it serve on a k3s node, with the node's
 * kubelet serving certificate as the (simulated) supervisor issues it:
 * signed by the server CA for 127.0.0.1 and localhost, so clients here
 * verify it with the server CA, as the k3s agent does.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEdgeProxy, type RunningEdgeProxy } from '../../../src/edge/edge-proxy.js';
import { K3S_AGENT_START_PATHS } from '../../../src/edge/k3s-supervisor.js';
import { MAX_HELD_K3S_TUNNELS } from '../../../src/edge/limits.js';
import { readUpstreamConfig } from '../../../src/edge/upstream-config.js';
import { startSimApiServer, type KubeObject, type SimApiServer } from '../../support/sim-apiserver/index.js';
import { call, send, type HttpsTarget } from '../../support/https-client.js';

/** Safety net for the proxy's own probe noticing the outage; not a timing assertion. */
const STATE_WAIT_MS = 20_000;
const SECRET = '0123456789abcdef';
const TOKEN = `agent1.${SECRET}`;
const OTHER_TOKEN = `agent2.${SECRET}`;
const NODE = {
  'k3s-Node-Name': 'edge-1',
  'k3s-Node-Password': '5f0c1d2e3a4b5c6d7e8f9a0b1c2d3e4f',
  'k3s-Node-IP': '10.0.0.7',
};
const NODE_CN = 'system:node:edge-1';
const KUBE_PROXY_CN = 'system:kube-proxy';

let dir: string;
let sim: SimApiServer;
let proxy: RunningEdgeProxy;
let target: HttpsTarget;
let nodeCert: { certPem: string; keyPem: string };
let kubeProxyCert: { certPem: string; keyPem: string };
const onlineAnswers = new Map<string, string>();
/** A tunnel opened through the proxy while online: the server's, so it goes when the server goes. */
let onlineTunnel: Socket | undefined;
/** Further tunnels held offline, let go with the first when the server is back. */
const heldExtra: Socket[] = [];

/** One `/v1-k3s/connect` websocket attempt: the status, and the socket when it upgraded (101). */
async function openTunnel(credentials: {
  cert?: { certPem: string; keyPem: string };
  token?: string;
}): Promise<{ status: number; socket?: Socket }> {
  const pending = send(target, {
    path: '/v1-k3s/connect',
    ...credentials,
    headers: {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-version': '13',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
    },
  });
  return new Promise((resolve, reject) => {
    pending.response.then((res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0 });
    }, reject);
    pending.request.on('upgrade', (res, socket: Socket) => resolve({ status: res.statusCode ?? 0, socket }));
  });
}

/** Resolves once a socket is closed (by the other end). */
function closed(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    if (socket.destroyed) resolve();
    socket.once('close', () => resolve());
    socket.resume();
  });
}

async function proxyCount(outcome: string): Promise<number> {
  const line = (await proxy.metrics())
    .split('\n')
    .find((text) => text.startsWith(`edgeadm_edge_proxy_requests_total{outcome="${outcome}"} `));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

function bootstrapToken(id: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `bootstrap-token-${id}`, namespace: 'kube-system' },
    type: 'bootstrap.kubernetes.io/token',
    stringData: { 'token-id': id, 'token-secret': SECRET, 'usage-bootstrap-authentication': 'true' },
  } as unknown as KubeObject;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edgeadm-k3s-supervisor-'));
  // k3s serves its server CA file at /cacerts (read on the first request, so it is written just after).
  const caCertsFile = join(dir, 'server-ca.crt');
  sim = await startSimApiServer({ anonymousAuth: false, k3sAgentCertificates: true, caCertsFile });
  await writeFile(caCertsFile, sim.caPem);
  sim.setObject(bootstrapToken('agent1'));
  sim.setObject(bootstrapToken('agent2'));
  const kubeconfig = join(dir, 'upstream.yaml');
  await writeFile(kubeconfig, sim.kubeconfig(), { mode: 0o600 });
  // The node's own certificate, mapped to itself (as join --enable-edge maps the node's certificate).
  nodeCert = await sim.issueClientCertificate({ user: NODE_CN, groups: ['system:nodes'] });
  kubeProxyCert = await sim.issueClientCertificate({ user: KUBE_PROXY_CN });
  // The node's kubelet serving certificate, as the supervisor issues it (certificate, CA, key).
  const serving = await call(
    { url: sim.url, caPem: sim.caPem },
    { path: '/v1-k3s/serving-kubelet.crt', token: TOKEN, headers: NODE },
  );
  expect(serving.status).toBe(200);
  const blocks = serving.text.match(/-----BEGIN [A-Z ]+-----[\s\S]*?-----END [A-Z ]+-----\n?/g) ?? [];
  const tls = {
    certPem: blocks.filter((block) => !block.includes('PRIVATE KEY')).join(''),
    keyPem: blocks.filter((block) => block.includes('PRIVATE KEY')).join(''),
  };
  proxy = await startEdgeProxy({
    upstream: await readUpstreamConfig(kubeconfig),
    listen: { host: '127.0.0.1', port: 0 },
    metricsListen: undefined,
    cacheDir: join(dir, 'cache'),
    cacheMaxBytes: 64 * 1024 * 1024,
    cacheMaxEntries: 1000,
    tls,
    clientCerts: new Map([
      [NODE_CN, nodeCert],
      [KUBE_PROXY_CN, kubeProxyCert],
    ]),
    healthIntervalMs: 500,
    isK3sSupervisor: true,
  });
  // Verified as the k3s agent verifies its server: with the server CA, at 127.0.0.1.
  target = { url: proxy.url, caPem: sim.caPem };
  expect(new X509Certificate(tls.certPem).checkIP('127.0.0.1')).toBe('127.0.0.1');
});

afterAll(async () => {
  await proxy?.close();
  await sim?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('the k3s supervisor start-up answers through the edge-proxy', () => {
  it("online: each start-up path is forwarded with the agent's credentials and answered by the server", async () => {
    for (const path of K3S_AGENT_START_PATHS) {
      for (const credentials of [{ token: TOKEN }, { cert: nodeCert }]) {
        const answer = await call(target, { path, ...credentials, headers: NODE });
        expect(answer.status, path).toBe(200);
        expect(answer.headers['x-edgeadm-edge-proxy'], path).toBeUndefined();
        onlineAnswers.set(`${path} ${'token' in credentials ? 'token' : 'cert'}`, answer.text);
      }
    }
    // The server refuses a token it does not know; nothing is kept for it.
    expect(
      (await call(target, { path: '/v1-k3s/client-kubelet.crt', token: `nobody.${SECRET}`, headers: NODE })).status,
    ).toBe(401);
    // /cacerts: the server's bytes, forwarded (and kept: they are public).
    const caCerts = await call(target, { path: '/cacerts' });
    expect(caCerts.status).toBe(200);
    expect(caCerts.text).toBe(sim.caPem);
    onlineAnswers.set('/cacerts', caCerts.text);
  });

  it("online: /v1-k3s/apiservers names the proxy, not the server, so the agent's load balancer stays on it", async () => {
    const answer = await call(target, { path: '/v1-k3s/apiservers', token: TOKEN });
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual([`127.0.0.1:${proxy.port}`]);
    // The server's own answer names the server: forwarding it would send the agent away from the proxy.
    const direct = await call({ url: sim.url, caPem: sim.caPem }, { path: '/v1-k3s/apiservers', token: TOKEN });
    expect(direct.json).toEqual([`127.0.0.1:${sim.port}`]);
    // Not to a caller without credentials, nor to credentials the server refuses (issue #40: `Basic Zm9v` got 200).
    expect((await call(target, { path: '/v1-k3s/apiservers' })).status).toBe(401);
    const refused = await call(target, { path: '/v1-k3s/apiservers', headers: { Authorization: 'Basic Zm9v' } });
    expect(refused.status).toBe(401);
    expect(refused.text).not.toContain(`127.0.0.1:${proxy.port}`);
    expect((await call(target, { path: '/v1-k3s/apiservers', token: `nobody.${SECRET}` })).status).toBe(401);
  });

  it("online: the node's tunnel is the server's, forwarded, not held by the proxy", async () => {
    const tunnel = await openTunnel({ cert: nodeCert });
    expect(tunnel.status).toBe(101);
    expect(await proxyCount('tunnel_held_offline')).toBe(0);
    onlineTunnel = tunnel.socket;
    // The server refuses a tunnel to anything but a node (k3s's nodeAuthed), and the proxy passes that on.
    expect((await openTunnel({ cert: kubeProxyCert })).status).toBe(403);
    await sim.kill();
    await expect.poll(() => proxy.isOnline, { timeout: STATE_WAIT_MS }).toBe(false);
    // The server went, and its tunnel with it: a tunnel the proxy faked would still be open.
    await closed(onlineTunnel!);
  });

  it('offline: the same credentials, node name and password get the answers kept for them', async () => {
    for (const path of K3S_AGENT_START_PATHS) {
      for (const credentials of [{ token: TOKEN }, { cert: nodeCert }]) {
        const answer = await call(target, { path, ...credentials, headers: NODE });
        expect(answer.status, path).toBe(200);
        expect(answer.headers['x-edgeadm-edge-proxy'], path).toMatch(/^cached; stored=/);
        expect(answer.text).toBe(onlineAnswers.get(`${path} ${'token' in credentials ? 'token' : 'cert'}`));
      }
    }
  });

  it('offline: another token, no credentials, a token the server refused, or an unmapped certificate get nothing', async () => {
    const path = '/v1-k3s/client-kubelet.crt';
    for (const token of [OTHER_TOKEN, `nobody.${SECRET}`, undefined]) {
      const answer = await call(target, { path, ...(token ? { token } : {}), headers: NODE });
      expect(answer.status, String(token)).toBe(503);
      expect(answer.text).not.toContain('PRIVATE KEY');
    }
    const other = await sim.issueClientCertificate({ user: 'system:node:edge-2', groups: ['system:nodes'] });
    expect((await call(target, { path, cert: other, headers: NODE })).status).toBe(401);
  });

  it('offline: the right token with any other node name or password gets nothing (generated)', async () => {
    const headerText = fc.string({ unit: fc.constantFrom(...'abz09-.:'.split('')), minLength: 1, maxLength: 40 });
    await fc.assert(
      fc.asyncProperty(headerText, headerText, async (name, password) => {
        fc.pre(name !== NODE['k3s-Node-Name'] || password !== NODE['k3s-Node-Password']);
        const answer = await call(target, {
          path: '/v1-k3s/serving-kubelet.crt',
          token: TOKEN,
          headers: { 'k3s-Node-Name': name, 'k3s-Node-Password': password },
        });
        expect(answer.status).toBe(503);
        expect(answer.text).not.toContain('PRIVATE KEY');
      }),
      { numRuns: 40 },
    );
    // Only one of the two headers right, and the headers missing, are other nodes too.
    const partial: Array<Record<string, string>> = [
      { 'k3s-Node-Name': NODE['k3s-Node-Name'] },
      { 'k3s-Node-Password': NODE['k3s-Node-Password'] },
      {},
    ];
    for (const headers of partial) {
      expect((await call(target, { path: '/v1-k3s/client-kubelet.crt', token: TOKEN, headers })).status).toBe(503);
    }
  });

  it('offline: /v1-k3s/apiservers names the proxy to credentials the server accepted, and to no one else', async () => {
    const kept = await call(target, { path: '/v1-k3s/apiservers', token: TOKEN });
    expect(kept.status).toBe(200);
    expect(kept.json).toEqual([`127.0.0.1:${proxy.port}`]);
    expect((await call(target, { path: '/v1-k3s/apiservers', cert: nodeCert })).status).toBe(200);
    for (const headers of [{ Authorization: 'Basic Zm9v' }, { Authorization: `Bearer ${OTHER_TOKEN}` }]) {
      expect((await call(target, { path: '/v1-k3s/apiservers', headers })).status, headers.Authorization).toBe(503);
    }
  });

  it('offline: what only the server can answer is refused with a reason, whoever asks', async () => {
    for (const path of ['/v1-k3s/connect', '/v1-k3s/config?x=1', '/v1-k3s/serving-kubelet.crt?x=1']) {
      for (const credentials of [{ token: TOKEN }, { cert: nodeCert }]) {
        const answer = await call(target, { path, ...credentials, headers: NODE });
        expect(answer.status, path).toBe(503);
        expect(answer.json.message, path).toContain('the k3s server is unreachable');
      }
    }
  });

  it('offline: /cacerts is the bytes the server served, to anyone (the agent checks its token hash on them)', async () => {
    const answer = await call(target, { path: '/cacerts' });
    expect(answer.status).toBe(200);
    expect(answer.text).toBe(onlineAnswers.get('/cacerts'));
  });

  it("offline: /readyz is answered by the proxy to the node's own certificate only", async () => {
    for (const path of ['/readyz', '/v1-k3s/readyz']) {
      const answer = await call(target, { path, cert: nodeCert });
      expect(answer.status, path).toBe(200);
      expect(answer.text).toBe('ok');
      for (const credentials of [{ token: TOKEN }, { cert: kubeProxyCert }, {}]) {
        expect((await call(target, { path, ...credentials })).status, path).toBe(503);
      }
    }
    const other = await sim.issueClientCertificate({ user: 'system:node:edge-2', groups: ['system:nodes'] });
    expect((await call(target, { path: '/readyz', cert: other })).status).toBe(401);
  });

  it("offline: only the node's own certificate holds a tunnel; another node, a token, another mapped identity get none", async () => {
    const other = await sim.issueClientCertificate({ user: 'system:node:edge-2', groups: ['system:nodes'] });
    expect((await openTunnel({ cert: other })).status).toBe(401);
    expect((await openTunnel({ token: TOKEN })).status).toBe(503);
    expect((await openTunnel({ cert: kubeProxyCert })).status).toBe(503);
    expect((await openTunnel({})).status).toBe(503);
    expect(await proxyCount('tunnel_held_offline')).toBe(0);
    const held = await openTunnel({ cert: nodeCert });
    expect(held.status).toBe(101);
    expect(await proxyCount('tunnel_held_offline')).toBe(1);
    onlineTunnel = held.socket;
  });

  it('offline: the tunnels held are bounded; one let go makes room again', async () => {
    const more: Socket[] = [];
    for (let i = 1; i < MAX_HELD_K3S_TUNNELS; i++) {
      const tunnel = await openTunnel({ cert: nodeCert });
      expect(tunnel.status).toBe(101);
      more.push(tunnel.socket!);
    }
    expect((await openTunnel({ cert: nodeCert })).status).toBe(503);
    const last = more.pop()!;
    last.destroy();
    await expect.poll(async () => (await openTunnel({ cert: nodeCert })).status).toBe(101);
    // Keep the rest held for the next test, which sees every one let go when the server is back.
    heldExtra.push(...more);
  });

  it("when the server is back, the held tunnel is let go, and the next one is the server's again", async () => {
    await sim.restart();
    await expect.poll(() => proxy.isOnline, { timeout: STATE_WAIT_MS }).toBe(true);
    await closed(onlineTunnel!);
    for (const socket of heldExtra) await closed(socket);
    const heldSoFar = await proxyCount('tunnel_held_offline');
    const tunnel = await openTunnel({ cert: nodeCert });
    expect(tunnel.status).toBe(101);
    expect(await proxyCount('tunnel_held_offline')).toBe(heldSoFar);
    tunnel.socket?.destroy();
    // Online, /readyz is the server's again: the proxy does not answer it.
    const answered = await proxyCount('answered_by_proxy');
    expect((await call(target, { path: '/readyz', cert: nodeCert })).status).toBe(200);
    expect(await proxyCount('answered_by_proxy')).toBe(answered);
  });
});
