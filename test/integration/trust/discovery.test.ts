/**
 * Token discovery against a real HTTPS server (the cluster-info test server
 * in test/support), with real TLS on both fetches.
 */
import { X509Certificate } from 'node:crypto';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { load } from 'js-yaml';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  formatBootstrapToken,
  generateBootstrapToken,
  type BootstrapToken,
} from '../../../src/trust/bootstrap-token.js';
import { caPinOf } from '../../../src/trust/ca-pin.js';
import { clusterInfoConfigMap } from '../../../src/trust/cluster-info.js';
import { discoverClusterInfo, type DiscoveryOptions } from '../../../src/trust/discovery.js';
import { renderClusterInfoKubeconfig } from '../../../src/trust/kubeconfig.js';
import {
  createCa,
  issueCertificate,
  type CertificateAndKey,
  type CertificateAuthority,
} from '../../../src/trust/pki.js';
import {
  startClusterInfoTestServer,
  type ClusterInfoTestServer,
  type ClusterInfoTestServerOptions,
} from '../../support/cluster-info-server.js';

/** Short polling so that "retry until the timeout" cases finish quickly. */
const FAST_POLL_MS = 100;
/** A timeout for cases that must fail at once: reaching it would time the test out first. */
const NEVER_MS = 10 * 60_000;
/** The address cluster-info advertises (not the one discovery asks). */
const ADVERTISED_SERVER = 'https://10.0.0.10:6443';

let clusterCa: CertificateAuthority;
let impostorCa: CertificateAuthority;
let serving: CertificateAndKey;
let impostorServing: CertificateAndKey;
let wrongNameServing: CertificateAndKey;
let clusterPin: string;
let token: BootstrapToken;
let kubeconfig: string;

beforeAll(async () => {
  clusterCa = await createCa({ commonName: 'edge-cluster-ca' });
  impostorCa = await createCa({ commonName: 'edge-cluster-ca' });
  const names = { commonName: 'kube-apiserver', ipAddresses: ['127.0.0.1'], dnsNames: ['localhost'] };
  serving = await issueCertificate({ ca: clusterCa, ...names, usages: ['server'] });
  impostorServing = await issueCertificate({ ca: impostorCa, ...names, usages: ['server'] });
  wrongNameServing = await issueCertificate({
    ca: clusterCa,
    commonName: 'kube-apiserver',
    ipAddresses: ['10.9.9.9'],
    usages: ['server'],
  });
  clusterPin = caPinOf(new X509Certificate(clusterCa.certPem));
  token = generateBootstrapToken();
  kubeconfig = renderClusterInfoKubeconfig({ server: ADVERTISED_SERVER, caPem: clusterCa.certPem });
});

let server: ClusterInfoTestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(options: Partial<ClusterInfoTestServerOptions> = {}): Promise<ClusterInfoTestServer> {
  server = await startClusterInfoTestServer({
    certificates: [serving],
    data: () => clusterInfoConfigMap({ kubeconfig, tokens: [token] }).data,
    ...options,
  });
  return server;
}

function discover(endpoint: string, options: Partial<DiscoveryOptions> = {}): ReturnType<typeof discoverClusterInfo> {
  return discoverClusterInfo({
    endpoint,
    token: formatBootstrapToken(token),
    caCertHashes: [clusterPin],
    timeoutMs: NEVER_MS,
    pollIntervalMs: FAST_POLL_MS,
    ...options,
  });
}

async function rejection(promise: Promise<unknown>): Promise<{ code: string; exitCode: number; message: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code: string; exitCode: number; message: string };
  }
  throw new Error('expected discovery to fail');
}

describe('discovery with the right token and pin', () => {
  it('returns the TLS-bootstrap kubeconfig for the advertised server and CA', async () => {
    const { endpoint } = await serve();
    const result = await discover(endpoint);

    expect(result).toMatchObject({
      endpoint: `https://${endpoint}`,
      server: ADVERTISED_SERVER,
      caPem: clusterCa.certPem,
      caPins: [clusterPin],
      matchedPin: clusterPin,
      isCaVerified: true,
      clusterInfoKubeconfig: kubeconfig,
    });
    expect(load(result.bootstrapKubeconfig)).toMatchObject({
      clusters: [
        {
          name: 'kubernetes',
          cluster: {
            server: ADVERTISED_SERVER,
            'certificate-authority-data': Buffer.from(clusterCa.certPem).toString('base64'),
          },
        },
      ],
      users: [{ name: 'tls-bootstrap-token-user', user: { token: formatBootstrapToken(token) } }],
      'current-context': 'tls-bootstrap-token-user@kubernetes',
    });
  });

  it('fetches twice, on two connections, anonymously (the token never goes over the wire)', async () => {
    const started = await serve();
    await discover(started.endpoint);
    expect(started.requests).toEqual([
      {
        method: 'GET',
        path: '/api/v1/namespaces/kube-public/configmaps/cluster-info',
        authorization: undefined,
        connection: 0,
      },
      {
        method: 'GET',
        path: '/api/v1/namespaces/kube-public/configmaps/cluster-info',
        authorization: undefined,
        connection: 1,
      },
    ]);
  });

  it('accepts the pin in upper case, and among other pins', async () => {
    const { endpoint } = await serve();
    const result = await discover(endpoint, {
      caCertHashes: [`sha256:${'0'.repeat(64)}`, clusterPin.toUpperCase()],
    });
    expect(result.matchedPin).toBe(clusterPin);
  });

  it('verifies a DNS-name endpoint against the certificate DNS SANs on the second fetch', async () => {
    const { port } = await serve();
    const result = await discover(`localhost:${port}`);
    expect(result).toMatchObject({ endpoint: `https://localhost:${port}`, isCaVerified: true });
  });

  it('accepts a CA bundle when any certificate in it is pinned', async () => {
    const oldCa = await createCa({ commonName: 'retiring-ca' });
    const bundleKubeconfig = renderClusterInfoKubeconfig({
      server: ADVERTISED_SERVER,
      caPem: oldCa.certPem + clusterCa.certPem,
    });
    const { endpoint } = await serve({
      data: () => clusterInfoConfigMap({ kubeconfig: bundleKubeconfig, tokens: [token] }).data,
    });
    const result = await discover(endpoint);
    expect(result.caPins).toEqual([caPinOf(new X509Certificate(oldCa.certPem)), clusterPin]);
    expect(result.matchedPin).toBe(clusterPin);
  });

  it('keeps polling while cluster-info is missing or not yet signed for the token', async () => {
    const started = await serve({
      data: (index) => {
        if (index === 0) return undefined; // 404: not created yet
        if (index === 1) return clusterInfoConfigMap({ kubeconfig, tokens: [] }).data; // signer has not run
        return clusterInfoConfigMap({ kubeconfig, tokens: [token] }).data;
      },
    });
    const result = await discover(started.endpoint);
    expect(result.isCaVerified).toBe(true);
    expect(started.requests).toHaveLength(4);
  });
});

describe('discovery refuses', () => {
  it('a wrong pin, with the message, and does not fetch again', async () => {
    const started = await serve();
    const error = await rejection(
      discover(started.endpoint, { caCertHashes: [caPinOf(new X509Certificate(impostorCa.certPem))] }),
    );
    expect(error.code).toBe('E_DISCOVERY_PIN_MISMATCH');
    expect(error.message).toBe(
      `cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "${clusterPin}" are pinned`,
    );
    expect(started.requests).toHaveLength(1);
  });

  it('a wrong token secret, with the message', async () => {
    const { endpoint } = await serve();
    const error = await rejection(discover(endpoint, { token: `${token.id}.${'x'.repeat(16)}` }));
    expect(error.code).toBe('E_DISCOVERY_JWS_INVALID');
    expect(error.message).toBe(
      "failed to verify JWS signature of received cluster info object, can't trust this API Server",
    );
  });

  it('an unknown token id: it polls until the timeout, then says there is no signature for it', async () => {
    const started = await serve();
    const unknown = 'zzzzzz.0123456789abcdef';
    const error = await rejection(discover(started.endpoint, { token: unknown, timeoutMs: 1000 }));
    expect(error.code).toBe('E_DISCOVERY_NO_JWS');
    expect(error.exitCode).toBe(1);
    expect(error.message).toBe('could not find a JWS signature in the cluster-info ConfigMap for token ID "zzzzzz"');
    expect(started.requests.length).toBeGreaterThan(1);
  });

  it('a server that presents a different certificate on the second fetch, at once', async () => {
    const started = await serve({ certificates: [serving, impostorServing] });
    const error = await rejection(discover(started.endpoint));
    expect(error.code).toBe('E_DISCOVERY_TLS_UNTRUSTED');
    expect(error.message).toBe(
      'failed to request the cluster-info ConfigMap over TLS verified with the pinned cluster CA: unable to verify the first certificate',
    );
    // The first fetch answered; the second connection was refused during the handshake.
    expect(started.requests).toHaveLength(1);
    expect(started.connectionCount()).toBe(2);
  });

  it('a second certificate from the right CA but not for this address', async () => {
    const started = await serve({ certificates: [serving, wrongNameServing] });
    const error = await rejection(discover(started.endpoint));
    expect(error.code).toBe('E_DISCOVERY_TLS_UNTRUSTED');
    expect(error.message).toContain("IP: 127.0.0.1 is not in the cert's list");
  });

  it('a kubeconfig that differs on the verified fetch', async () => {
    const changed = renderClusterInfoKubeconfig({ server: 'https://10.0.0.99:6443', caPem: clusterCa.certPem });
    const { endpoint } = await serve({
      data: (index) => clusterInfoConfigMap({ kubeconfig: index === 0 ? kubeconfig : changed, tokens: [token] }).data,
    });
    const error = await rejection(discover(endpoint));
    expect(error.code).toBe('E_DISCOVERY_CHANGED');
    expect(error.message).toBe(
      'the second kubeconfig from the cluster-info ConfigMap (using validated TLS) was different from the first',
    );
  });

  it('a signed cluster-info whose CA is not a certificate', async () => {
    const broken = renderClusterInfoKubeconfig({ server: ADVERTISED_SERVER, caPem: 'not a certificate' });
    const { endpoint } = await serve({
      data: () => clusterInfoConfigMap({ kubeconfig: broken, tokens: [token] }).data,
    });
    const error = await rejection(discover(endpoint));
    expect(error.code).toBe('E_DISCOVERY_BAD_CA');
    expect(error.message).toBe(
      'failed to parse cluster CA from the cluster-info ConfigMap: the cluster CA of the cluster-info ConfigMap does not contain any PEM certificate',
    );
  });

  it('an unreachable server after the timeout, with the last request error', async () => {
    const started = await serve();
    const { endpoint } = started;
    await started.close();
    server = undefined;
    const error = await rejection(discover(endpoint, { timeoutMs: 500 }));
    expect(error.code).toBe('E_DISCOVERY_TIMEOUT');
    expect(error.message).toBe(`failed to request the cluster-info ConfigMap: connect ECONNREFUSED ${endpoint}`);
  });

  it('a server that accepts connections and never answers, within the timeout', async () => {
    const held: Socket[] = [];
    const silent = createNetServer((socket) => {
      held.push(socket);
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      const error = await rejection(discover(`127.0.0.1:${port}`, { timeoutMs: 500 }));
      expect(error.code).toBe('E_DISCOVERY_TIMEOUT');
      expect(error.message).toMatch(/^failed to request the cluster-info ConfigMap: no answer within \d+ms$/);
    } finally {
      for (const socket of held) socket.destroy();
      silent.close();
    }
  });
});

describe('discovery with --discovery-token-unsafe-skip-ca-verification', () => {
  it('accepts the CA unverified after checking the signature, with one fetch', async () => {
    const started = await serve({ certificates: [impostorServing] });
    const result = await discover(started.endpoint, { caCertHashes: [], isUnsafeSkipCaVerification: true });
    expect(result.isCaVerified).toBe(false);
    expect(result.matchedPin).toBeUndefined();
    expect(result.caPins).toEqual([clusterPin]);
    expect(started.requests).toHaveLength(1);
  });

  it('still refuses a wrong token secret', async () => {
    const { endpoint } = await serve();
    const error = await rejection(
      discover(endpoint, {
        caCertHashes: [],
        isUnsafeSkipCaVerification: true,
        token: `${token.id}.${'y'.repeat(16)}`,
      }),
    );
    expect(error.code).toBe('E_DISCOVERY_JWS_INVALID');
  });
});
