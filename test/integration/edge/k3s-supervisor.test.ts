/**
 * The edge-proxy's k3s supervisor answers (`--k3s-supervisor`,
 * src/edge/k3s-supervisor.ts) against the SIMULATED API server (not k3s),
 * which serves the supervisor paths a k3s agent asks at every start as
 * k3s's router does (test/support/sim-apiserver): online they are
 * forwarded with the caller's credentials and kept; offline they are
 * answered only to the same credentials, node name and node password, and
 * every other `/v1-k3s/` path is refused.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEdgeProxy, type RunningEdgeProxy } from '../../../src/edge/edge-proxy.js';
import { K3S_AGENT_START_PATHS } from '../../../src/edge/k3s-supervisor.js';
import { readUpstreamConfig } from '../../../src/edge/upstream-config.js';
import { startSimApiServer, type KubeObject, type SimApiServer } from '../../support/sim-apiserver/index.js';
import { call, type HttpsTarget } from '../../support/https-client.js';

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

let dir: string;
let sim: SimApiServer;
let proxy: RunningEdgeProxy;
let target: HttpsTarget;
let nodeCert: { certPem: string; keyPem: string };
const onlineAnswers = new Map<string, string>();

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
  sim = await startSimApiServer({ anonymousAuth: false, k3sAgentCertificates: true });
  sim.setObject(bootstrapToken('agent1'));
  sim.setObject(bootstrapToken('agent2'));
  const kubeconfig = join(dir, 'upstream.yaml');
  await writeFile(kubeconfig, sim.kubeconfig(), { mode: 0o600 });
  // The node's own certificate, mapped to itself (as join --enable-edge maps the node's certificate).
  nodeCert = await sim.issueClientCertificate({ user: NODE_CN, groups: ['system:nodes'] });
  proxy = await startEdgeProxy({
    upstream: await readUpstreamConfig(kubeconfig),
    listen: { host: '127.0.0.1', port: 0 },
    metricsListen: undefined,
    cacheDir: join(dir, 'cache'),
    cacheMaxBytes: 64 * 1024 * 1024,
    cacheMaxEntries: 1000,
    clientCerts: new Map([[NODE_CN, nodeCert]]),
    healthIntervalMs: 500,
    isK3sSupervisor: true,
  });
  target = { url: proxy.url, caPem: readFileSync(proxy.servingCaFile!, 'utf8') };
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
    await sim.kill();
    await expect.poll(() => proxy.isOnline, { timeout: STATE_WAIT_MS }).toBe(false);
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

  it('offline: what only the server can answer is refused with a reason, whoever asks', async () => {
    for (const path of ['/v1-k3s/connect', '/v1-k3s/apiservers', '/v1-k3s/readyz', '/v1-k3s/config?x=1']) {
      const answer = await call(target, { path, token: TOKEN, headers: NODE });
      expect(answer.status, path).toBe(503);
      expect(answer.json.message, path).toContain('the k3s server is unreachable');
    }
  });
});
