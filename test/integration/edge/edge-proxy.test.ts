/**
 * The edge-proxy against a real HTTPS upstream — the SIMULATED API server
 * from test/support (not kube-apiserver) — through its domain entry point:
 * kubelet-style LIST then WATCH across an outage, identity partitioning,
 * corrupt entries, client-certificate mapping, the offline write policy,
 * protocol upgrades (kubectl exec) and the metrics endpoint.
 */
import { readFileSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cacheKeyOf, classifyRequest, entryFileNameOf, identityKeyOf } from '../../../src/edge/cache-key.js';
import { startEdgeProxy, type RunningEdgeProxy } from '../../../src/edge/edge-proxy.js';
import { loadClientCertMappings, readUpstreamConfig } from '../../../src/edge/upstream-config.js';
import {
  runKubectl,
  startSimApiServer,
  type KubeObject,
  type SimApiServer,
} from '../../support/sim-apiserver/index.js';
import { call, openWatch, type HttpsTarget } from '../../support/https-client.js';

/** Safety net for state changes the proxy makes on its own (probe results); not a timing assertion. */
const STATE_WAIT_MS = 20_000;
const ALICE = 'alice-token-for-edge-proxy-tests';
const BOB = 'bob-token-for-edge-proxy-tests';
const NODE_CN = 'system:node:edge-1';
const MAPPED_USER = 'edge-1-mapped-upstream';

let dir: string;
let sim: SimApiServer;
let proxy: RunningEdgeProxy;
let target: HttpsTarget;
let kubeletCert: { certPem: string; keyPem: string };

function pod(name: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { app: 'edge' } },
    spec: { nodeName: 'edge-1', containers: [{ name: 'main', image: 'registry.local/app:1' }] },
  } as KubeObject;
}

async function goOffline(): Promise<void> {
  await sim.kill();
  await expect.poll(() => proxy.isOnline, { timeout: STATE_WAIT_MS }).toBe(false);
}

async function goOnline(): Promise<void> {
  if (!sim.isRunning) await sim.restart();
  await expect.poll(() => proxy.isOnline, { timeout: STATE_WAIT_MS }).toBe(true);
}

function cacheFiles(): string[] {
  const entries = join(dir, 'cache', 'entries');
  return readdirSync(entries).map((name) => join(entries, name));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edgeadm-edge-proxy-'));
  sim = await startSimApiServer({
    tokens: { [ALICE]: { user: 'alice', groups: ['system:masters'] }, [BOB]: { user: 'bob' } },
    recordRequests: true,
  });
  // bob may read ConfigMaps but not Secrets.
  sim.setObject({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'configmap-reader' },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
  } as KubeObject);
  sim.setObject({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'bob-configmap-reader' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'configmap-reader' },
    subjects: [{ kind: 'User', name: 'bob', apiGroup: 'rbac.authorization.k8s.io' }],
  } as KubeObject);
  const kubeconfig = join(dir, 'upstream.yaml');
  await writeFile(kubeconfig, sim.kubeconfig(), { mode: 0o600 });
  // The kubelet's certificate (CN system:node:edge-1) and the one the proxy presents upstream for it.
  kubeletCert = await sim.issueClientCertificate({ user: NODE_CN, groups: ['system:nodes'] });
  const mapped = await sim.issueClientCertificate({ user: MAPPED_USER, groups: ['system:masters'] });
  proxy = await startEdgeProxy({
    upstream: await readUpstreamConfig(kubeconfig),
    listen: { host: '127.0.0.1', port: 0 },
    metricsListen: { host: '127.0.0.1', port: 0 },
    cacheDir: join(dir, 'cache'),
    cacheMaxBytes: 64 * 1024 * 1024,
    cacheMaxEntries: 1000,
    clientCerts: new Map([[NODE_CN, mapped]]),
    healthIntervalMs: 500,
  });
  target = { url: proxy.url, caPem: readFileSync(proxy.servingCaFile!, 'utf8') };
});

afterEach(async () => {
  // A failed test must not leave the upstream down for the next one.
  sim.resume();
  await goOnline();
});

afterAll(async () => {
  await proxy?.close();
  await sim?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('edge-proxy with the simulated API server as upstream', () => {
  it('keeps a LIST+WATCH client working through an outage and resumes the watch without losing an event', async () => {
    sim.setObject(pod('p1'));
    const listPath = '/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%3Dedge-1&limit=500';
    const listed = await call(target, { path: listPath, token: ALICE });
    expect(listed.status).toBe(200);
    expect(listed.json.items.map((item: KubeObject) => item.metadata.name)).toEqual(['p1']);
    const watch = await openWatch(target, {
      path: `/api/v1/namespaces/default/pods?watch=true&fieldSelector=spec.nodeName%3Dedge-1&allowWatchBookmarks=true&resourceVersion=${listed.json.metadata.resourceVersion}`,
      token: ALICE,
    });
    expect(watch.status).toBe(200);
    sim.setObject(pod('p2'));
    await watch.waitFor((event) => event.type === 'ADDED' && event.object.metadata.name === 'p2');

    await goOffline();
    const cached = await call(target, { path: listPath, token: ALICE });
    expect(cached.status).toBe(200);
    expect(cached.headers['x-edgeadm-edge-proxy']).toMatch(/^cached/);
    // p2 arrived by watch only: the cached list was kept current from the event.
    expect(cached.json.items.map((item: KubeObject) => item.metadata.name).sort()).toEqual(['p1', 'p2']);
    expect(watch.isEnded).toBe(false);

    // Changes made while the node is cut off.
    sim.setObject(pod('p3'));
    sim.deleteObject({ apiVersion: 'v1', kind: 'Pod', namespace: 'default', name: 'p1' });
    await goOnline();
    await watch.waitFor((event) => event.type === 'ADDED' && event.object.metadata.name === 'p3');
    await watch.waitFor((event) => event.type === 'DELETED' && event.object.metadata.name === 'p1');
    // The real watch resumed: a change after the outage arrives too.
    sim.setObject(pod('p4'));
    await watch.waitFor((event) => event.type === 'ADDED' && event.object.metadata.name === 'p4');
    const names = (type: string): string[] =>
      watch.events.filter((event) => event.type === type).map((event) => event.object.metadata.name as string);
    expect(names('ADDED')).toEqual(['p2', 'p3', 'p4']);
    expect(names('DELETED')).toEqual(['p1']);
    expect(watch.isEnded).toBe(false);

    const fresh = await call(target, { path: listPath, token: ALICE });
    expect(fresh.headers['x-edgeadm-edge-proxy']).toBeUndefined();
    expect(fresh.json.items.map((item: KubeObject) => item.metadata.name).sort()).toEqual(['p2', 'p3', 'p4']);
    watch.close();
  });

  it('never lets one identity read what another cached, and keeps tokens off the disk', async () => {
    sim.setObject({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'alice-only', namespace: 'default' },
      data: { password: Buffer.from('s3cr3t').toString('base64') },
    } as KubeObject);
    const path = '/api/v1/namespaces/default/secrets';
    expect((await call(target, { path, token: ALICE })).status).toBe(200);
    expect((await call(target, { path, token: BOB })).status).toBe(403);
    expect((await call(target, { path: '/api/v1/namespaces/default/configmaps', token: BOB })).status).toBe(200);

    await goOffline();
    const alice = await call(target, { path, token: ALICE });
    expect(alice.status).toBe(200);
    expect(alice.json.items.map((item: KubeObject) => item.metadata.name)).toContain('alice-only');
    const bob = await call(target, { path, token: BOB });
    expect(bob.status).toBe(503);
    expect(bob.text).not.toContain('alice-only');
    const anonymous = await call(target, { path });
    expect(anonymous.status).toBe(503);
    expect((await call(target, { path: '/api/v1/namespaces/default/configmaps', token: BOB })).status).toBe(200);

    for (const file of cacheFiles()) {
      const text = readFileSync(file, 'utf8');
      expect(text).not.toContain(ALICE);
      expect(text).not.toContain(BOB);
      expect(statSync(file).mode & 0o777).toBe(0o600);
    }
    expect(statSync(join(dir, 'cache')).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'cache', 'entries')).mode & 0o777).toBe(0o700);
    await goOnline();
  });

  it('treats a hanging API server as offline (failed readiness probe) and switches back when it answers again', async () => {
    const path = '/api/v1/namespaces/default/configmaps';
    expect((await call(target, { path, token: ALICE })).status).toBe(200);
    sim.pause();
    try {
      await expect.poll(() => proxy.isOnline, { timeout: STATE_WAIT_MS }).toBe(false);
      const cached = await call(target, { path, token: ALICE });
      expect(cached.status).toBe(200);
      expect(cached.headers['x-edgeadm-edge-proxy']).toMatch(/^cached/);
    } finally {
      sim.resume();
    }
    await goOnline();
    expect((await call(target, { path, token: ALICE })).headers['x-edgeadm-edge-proxy']).toBeUndefined();
  });

  it('drops a corrupted cache entry instead of serving it', async () => {
    sim.setObject({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', namespace: 'default' },
      data: { mode: 'original-value' },
    } as KubeObject);
    const path = '/api/v1/namespaces/default/configmaps/settings';
    expect((await call(target, { path, token: ALICE })).status).toBe(200);
    const key = cacheKeyOf(
      identityKeyOf(proxy.cache.installKey, { principal: `token:${ALICE}`, impersonation: [] }),
      classifyRequest('GET', { path, query: '', target: path }, 'application/json'),
    );
    const file = join(dir, 'cache', 'entries', entryFileNameOf(key));
    await expect.poll(() => cacheFiles().includes(file), { timeout: STATE_WAIT_MS }).toBe(true);
    // Same length, one value changed: only the checksum can tell.
    writeFileSync(file, readFileSync(file, 'utf8').replace('original-value', 'tampered-value'));

    await goOffline();
    const answer = await call(target, { path, token: ALICE });
    expect(answer.status).toBe(503);
    expect(answer.text).not.toContain('tampered-value');
    expect(cacheFiles()).not.toContain(file);
    expect(await proxy.metrics()).toMatch(/^edgeadm_edge_proxy_cache_corrupt_dropped_total 1$/m);
    await goOnline();
  });

  it('maps a client certificate by CN, refuses unknown ones, and answers node registration offline only for a known node', async () => {
    sim.setObject({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'edge-1' } } as KubeObject);
    sim.clearRequests();
    const node = await call(target, { path: '/api/v1/nodes?fieldSelector=metadata.name%3Dedge-1', cert: kubeletCert });
    expect(node.status).toBe(200);
    expect(sim.requests.filter((request) => request.resource === 'nodes').map((request) => request.user)).toEqual([
      MAPPED_USER,
    ]);

    const stranger = await sim.issueClientCertificate({ user: 'stranger', groups: ['system:masters'] });
    sim.clearRequests();
    const refused = await call(target, { path: '/api/v1/nodes', cert: stranger });
    expect(refused.status).toBe(401);
    expect(refused.json.message).toContain('no --client-cert-map entry');
    // (The proxies' own /readyz probes are in the log too: look for the stranger only.)
    expect(sim.requests.filter((request) => request.user === 'stranger')).toEqual([]);

    await goOffline();
    const registration = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'edge-1' } };
    const again = await call(target, { method: 'POST', path: '/api/v1/nodes', body: registration, cert: kubeletCert });
    expect(again.status).toBe(409);
    expect(again.json.reason).toBe('AlreadyExists');
    // The kubelet then reads its Node: served from the cached list.
    const read = await call(target, { path: '/api/v1/nodes/edge-1', cert: kubeletCert });
    expect(read.status).toBe(200);
    expect(read.json.metadata.name).toBe('edge-1');
    const unknown = await call(target, {
      method: 'POST',
      path: '/api/v1/nodes',
      body: { ...registration, metadata: { name: 'edge-9' } },
      cert: kubeletCert,
    });
    expect(unknown.status).toBe(503);
    const lease = await call(target, {
      method: 'PUT',
      path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/edge-1',
      body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'edge-1' } },
      cert: kubeletCert,
    });
    expect(lease.status).toBe(503);
    expect(lease.json.message).toContain('the API server is unreachable');
    await goOnline();
  });

  it('answers offline node registration 409 only for a DNS-1123 name it has seen, never for a name that reads as a path', async () => {
    sim.setObject({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'edge-1' } } as KubeObject);
    sim.setObject({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'topsecret', namespace: 'kube-system' },
      data: { key: Buffer.from('value').toString('base64') },
    } as KubeObject);
    // Both cached for this identity: a name read as a path would find either.
    expect((await call(target, { path: '/api/v1/nodes/edge-1', cert: kubeletCert })).status).toBe(200);
    const secret = '/api/v1/namespaces/kube-system/secrets/topsecret';
    expect((await call(target, { path: secret, cert: kubeletCert })).status).toBe(200);

    await goOffline();
    const register = (name: string) =>
      call(target, {
        method: 'POST',
        path: '/api/v1/nodes',
        body: { apiVersion: 'v1', kind: 'Node', metadata: { name } },
        cert: kubeletCert,
      });
    expect((await register('edge-1')).status).toBe(409);
    const pathLike = fc.sample(
      fc
        .tuple(
          fc.constantFrom('edge-1', 'x', '..', ''),
          fc.constantFrom('/', '?x=1', '/..', '/../', '%2f', '\\', '#', 'A', '_', ' '),
          fc.constantFrom('', 'edge-1', '../namespaces/kube-system/secrets/topsecret', 'x/../edge-1'),
        )
        .map((parts) => parts.join('')),
      { numRuns: 30, seed: 409 },
    );
    const names = ['edge-1/', 'edge-1?x=1', 'x/../edge-1', '../namespaces/kube-system/secrets/topsecret', ...pathLike];
    const answers: [string, number, string][] = [];
    for (const name of names) {
      const answer = await register(name);
      answers.push([name, answer.status, answer.json?.reason]);
    }
    expect(answers).toEqual(names.map((name) => [name, 503, 'ServiceUnavailable']));
    await goOnline();
  });

  it('picks up a rotated upstream certificate from the --client-cert-map files', async () => {
    const certFile = join(dir, 'mapped.pem');
    const keyFile = join(dir, 'mapped-key.pem');
    const first = await sim.issueClientCertificate({ user: 'rotated-first', groups: ['system:masters'] });
    writeFileSync(certFile, first.certPem);
    writeFileSync(keyFile, first.keyPem);
    const rotating = await startEdgeProxy({
      upstream: await readUpstreamConfig(join(dir, 'upstream.yaml')),
      listen: { host: '127.0.0.1', port: 0 },
      metricsListen: undefined,
      cacheDir: join(dir, 'rotating-cache'),
      cacheMaxBytes: 1024 * 1024,
      cacheMaxEntries: 100,
      clientCerts: loadClientCertMappings([{ commonName: NODE_CN, certFile, keyFile }]),
      clientCertReloadCheckMs: 0,
      healthIntervalMs: 500,
    });
    try {
      const rotatingTarget = { url: rotating.url, caPem: readFileSync(rotating.servingCaFile!, 'utf8') };
      const usersOf = async (): Promise<string[]> => {
        sim.clearRequests();
        expect((await call(rotatingTarget, { path: '/api/v1/nodes', cert: kubeletCert })).status).toBe(200);
        return sim.requests.filter((request) => request.resource === 'nodes').map((request) => request.user);
      };
      expect(await usersOf()).toEqual(['rotated-first']);
      const second = await sim.issueClientCertificate({ user: 'rotated-second', groups: ['system:masters'] });
      writeFileSync(certFile, second.certPem);
      writeFileSync(keyFile, second.keyPem);
      const later = new Date(Date.now() + 60_000);
      utimesSync(certFile, later, later);
      utimesSync(keyFile, later, later);
      expect(await usersOf()).toEqual(['rotated-second']);
    } finally {
      await rotating.close();
    }
  });

  it('forwards protocol upgrades (kubectl exec) and serves /healthz and /metrics', async () => {
    sim.setObject(pod('shell'));
    const kubeconfig = [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: edge-proxy',
      '  cluster:',
      `    server: ${proxy.url}`,
      `    certificate-authority-data: ${Buffer.from(target.caPem).toString('base64')}`,
      'users:',
      '- name: alice',
      '  user:',
      `    token: ${ALICE}`,
      'contexts:',
      '- name: edge-proxy',
      '  context: {cluster: edge-proxy, user: alice, namespace: default}',
      'current-context: edge-proxy',
      '',
    ].join('\n');
    const exec = await runKubectl(['exec', 'shell', '--', 'echo', 'through-the-proxy'], { kubeconfig });
    expect(exec.stderr).toBe('');
    expect(exec.stdout.trim()).toBe('through-the-proxy');

    const metricsServer = { url: String(proxy.metricsUrl) };
    const health = await call(metricsServer, { path: '/healthz' });
    expect(health.status).toBe(200);
    const metrics = (await call(metricsServer, { path: '/metrics' })).text;
    expect(metrics).toMatch(/^edgeadm_edge_proxy_online 1$/m);
    expect(metrics).toMatch(/^edgeadm_edge_proxy_cache_entries [1-9]\d*$/m);
    expect(metrics).toMatch(/^edgeadm_edge_proxy_requests_total\{outcome="cache_hit_offline"\} [1-9]/m);
  });
});
