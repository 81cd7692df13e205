/**
 * Token discovery against an API server that refuses anonymous requests, as
 * k3s's does (`anonymous-auth=false`), and serves its CA at `/cacerts` as
 * k3s's supervisor does: the simulated API server (test/support, a
 * simulation, not kube-apiserver) with both switched on, and edgeadm's
 * cluster-info and RBAC as `edgeadm init` writes them.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clusterInfoRbacObjects } from '../../../src/cluster/bootstrap-tokens.js';
import {
  bootstrapTokenSecret,
  formatBootstrapToken,
  generateBootstrapToken,
  type BootstrapToken,
} from '../../../src/trust/bootstrap-token.js';
import { caPinOf } from '../../../src/trust/ca-pin.js';
import { CLUSTER_INFO_PATH, clusterInfoConfigMap } from '../../../src/trust/cluster-info.js';
import { discoverClusterInfo, K3S_CA_CERTS_PATH, type DiscoveryOptions } from '../../../src/trust/discovery.js';
import { k3sCaHash } from '../../../src/trust/k3s-token.js';
import { renderClusterInfoKubeconfig } from '../../../src/trust/kubeconfig.js';
import { startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';
import { call } from '../sim-apiserver/http-client.js';

/** Short polling, so that "retry until the timeout" cases end quickly. */
const FAST_POLL_MS = 50;
/** For cases that must fail at once: reaching it would time the test out first. */
const NEVER_MS = 10 * 60_000;

let dir: string;
let server: SimApiServer;
let token: BootstrapToken;
let pin: string;
/** What the server serves at /cacerts: the CA with a trailing blank line, so its bytes differ from cluster-info's. */
let servedBytes: string;

async function startServer(options: { anonymousAuth: boolean }): Promise<SimApiServer> {
  const started = await startSimApiServer({
    anonymousAuth: options.anonymousAuth,
    caCertsFile: join(dir, 'server-ca.crt'),
    recordRequests: true,
  });
  servedBytes = `${started.caPem.trimEnd()}\n\n`;
  await writeFile(join(dir, 'server-ca.crt'), servedBytes);
  const { role, binding } = clusterInfoRbacObjects();
  for (const object of [
    role,
    binding,
    bootstrapTokenSecret({ token }),
    clusterInfoConfigMap({
      kubeconfig: renderClusterInfoKubeconfig({ server: started.url, caPem: started.caPem.trimEnd() }),
      tokens: [token],
    }),
  ]) {
    started.setObject(object as Parameters<SimApiServer['setObject']>[0]);
  }
  pin = caPinOf(new X509Certificate(started.caPem));
  return started;
}

function discover(options: Partial<DiscoveryOptions> = {}): ReturnType<typeof discoverClusterInfo> {
  return discoverClusterInfo({
    endpoint: `${server.host}:${server.port}`,
    token,
    caCertHashes: [pin],
    timeoutMs: NEVER_MS,
    pollIntervalMs: FAST_POLL_MS,
    ...options,
  });
}

/** Requests that carried the bootstrap token (the server authenticated them as the token's user). */
function requestsAsToken(): string[] {
  return server.requests.filter((r) => r.user === `system:bootstrap:${token.id}`).map((r) => r.path);
}

/** Whether any request reached the server with the token's secret (as a bearer, refused or not). */
function hasTokenBeenSent(): boolean {
  return server.requests.some(
    (r) => r.user === `system:bootstrap:${token.id}` || JSON.stringify(r.headers).includes(token.secret),
  );
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edgeadm-discovery-'));
  token = generateBootstrapToken();
});

afterEach(async () => {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('discovery against an API server without anonymous access (as k3s)', () => {
  beforeEach(async () => {
    server = await startServer({ anonymousAuth: false });
  });

  it('refuses the anonymous cluster-info request that kubeadm-style discovery makes (401)', async () => {
    const anonymous = await call(server, { path: CLUSTER_INFO_PATH, token: null });
    expect(anonymous.status).toBe(401);
    expect(anonymous.json).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
  });

  it('verifies the server through /cacerts and the pin, then reads cluster-info with the token over pinned TLS', async () => {
    const result = await discover();
    expect(result.isCaVerified).toBe(true);
    expect(result.matchedPin).toBe(pin);
    expect(result.server).toBe(server.url);
    // The bytes as served, which k3s's agent hashes, not cluster-info's (which lack the blank line).
    expect(result.servedCaBundle).toBe(servedBytes);
    expect(result.caPem).not.toBe(servedBytes);
    expect(k3sCaHash(result.servedCaBundle!)).toBe(createHash('sha256').update(servedBytes).digest('hex'));
    expect(requestsAsToken()).toEqual([CLUSTER_INFO_PATH]);
    expect(result.bootstrapKubeconfig).toContain(formatBootstrapToken(token));
  });

  it('a wrong pin stops after /cacerts, before the token is ever sent', async () => {
    const other = `sha256:${'0'.repeat(64)}`;
    await expect(discover({ caCertHashes: [other] })).rejects.toMatchObject({
      code: 'E_DISCOVERY_PIN_MISMATCH',
      message: expect.stringContaining(`cluster CA found in the CA bundle served at ${K3S_CA_CERTS_PATH} is invalid`),
    });
    expect(hasTokenBeenSent()).toBe(false);
  });

  it('without a pin (the unsafe flag) it refuses rather than send the token to an unverified server', async () => {
    await expect(discover({ caCertHashes: [], isUnsafeSkipCaVerification: true })).rejects.toMatchObject({
      code: 'E_DISCOVERY_ANONYMOUS_REFUSED',
    });
    expect(hasTokenBeenSent()).toBe(false);
  });

  it('a token the cluster does not know: kubeadm words, after the timeout, with the refusal', async () => {
    const unknown = generateBootstrapToken();
    const error = await discover({ token: unknown, timeoutMs: 300 }).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_NO_JWS',
      message: expect.stringContaining(
        `could not find a JWS signature in the cluster-info ConfigMap for token ID "${unknown.id}"`,
      ),
    });
    expect((error as Error).message).toContain('Unauthorized');
  });
});

describe('discovery against an API server with anonymous access (as kubeadm)', () => {
  beforeEach(async () => {
    server = await startServer({ anonymousAuth: true });
  });

  it('stays anonymous: the token never goes over the wire, and /cacerts is not asked', async () => {
    const result = await discover();
    expect(result.isCaVerified).toBe(true);
    expect(result.servedCaBundle).toBeUndefined();
    expect(hasTokenBeenSent()).toBe(false);
    const paths = server.requests.map((r) => r.path);
    expect(paths).toEqual([CLUSTER_INFO_PATH, CLUSTER_INFO_PATH]);
  });
});
