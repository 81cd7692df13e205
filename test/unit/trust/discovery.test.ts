import { X509Certificate } from 'node:crypto';
import { Agent as HttpsAgent } from 'node:https';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EdgeadmError } from '../../../src/errors.js';
import type { Logger } from '../../../src/log/run-log.js';
import type { BootstrapToken } from '../../../src/trust/bootstrap-token.js';
import { caPinOf } from '../../../src/trust/ca-pin.js';
import { CLUSTER_INFO_PATH, clusterInfoConfigMap } from '../../../src/trust/cluster-info.js';
import {
  discoverClusterInfo,
  K3S_CA_CERTS_PATH,
  MAX_CLUSTER_INFO_RESPONSE_BYTES,
  parseDiscoveryEndpoint,
  type DiscoveryOptions,
} from '../../../src/trust/discovery.js';
import { renderBootstrapKubeconfig, renderClusterInfoKubeconfig } from '../../../src/trust/kubeconfig.js';
import {
  createCa,
  issueCertificate,
  type CertificateAndKey,
  type CertificateAuthority,
} from '../../../src/trust/pki.js';
import {
  startScriptedHttpsServer,
  type ScriptedAnswer,
  type ScriptedHttpsServer,
  type ScriptedRequest,
} from '../../support/scripted-https-server.js';

/** Nothing listens here: an option error must be reported before any request. */
const UNREACHABLE = '127.0.0.1:1';
const PIN = `sha256:${'ab'.repeat(32)}`;

async function failure(options: Partial<DiscoveryOptions>): Promise<Record<string, unknown>> {
  try {
    await discoverClusterInfo({
      endpoint: UNREACHABLE,
      token: 'abcdef.0123456789abcdef',
      caCertHashes: [PIN],
      // Far longer than an option check takes: reaching the network instead ends in E_DISCOVERY_TIMEOUT, the wrong error.
      timeoutMs: 8_000,
      ...options,
    });
  } catch (error) {
    return error as Record<string, unknown>;
  }
  throw new Error('expected discovery to fail');
}

describe('parseDiscoveryEndpoint', () => {
  it.each([
    ['10.0.0.10:6443', { host: '10.0.0.10', port: 6443 }],
    ['api.site-42.example:443', { host: 'api.site-42.example', port: 443 }],
    ['[fd00::10]:6443', { host: 'fd00::10', port: 6443 }],
    ['localhost:1', { host: 'localhost', port: 1 }],
  ])('reads %j', (endpoint, target) => {
    expect(parseDiscoveryEndpoint(endpoint)).toEqual(target);
  });

  it.each([
    ['10.0.0.10', 'expected host:port'],
    ['https://10.0.0.10:6443', 'expected host:port'],
    ['fd00::10:6443', 'expected host:port'],
    ['[10.0.0.1]:6443', 'the part in brackets is not an IPv6 address'],
    ['10.0.0.10:0', 'port 0 is out of range'],
    ['10.0.0.10:70000', 'port 70000 is out of range'],
    ['bad_host:6443', 'the host is neither an IP address nor a DNS name'],
  ])('refuses %j: %s', (endpoint, why) => {
    expect(() => parseDiscoveryEndpoint(endpoint)).toThrow(
      expect.objectContaining({
        code: 'E_DISCOVERY_ENDPOINT_INVALID',
        exitCode: 3,
        message: `invalid API server endpoint ${JSON.stringify(endpoint)}: ${why}`,
      }),
    );
  });
});

describe('discoverClusterInfo option checks (before any request)', () => {
  it('refuses to run with neither a pin nor the unsafe flag, explaining both', async () => {
    const error = await failure({ caCertHashes: [] });
    expect(error.code).toBe('E_DISCOVERY_NO_PIN');
    expect(error.exitCode).toBe(3);
    expect(error.message).toContain('using token-based discovery without --discovery-token-ca-cert-hash can be unsafe');
    const hints = (error.hints as string[]).join('\n');
    expect(hints).toContain('--discovery-token-ca-cert-hash sha256:<hash>');
    expect(hints).toContain('edgeadm certs ca-hash');
    expect(hints).toContain('--discovery-token-unsafe-skip-ca-verification');
  });

  it("wraps a malformed pin in kubeadm's words", async () => {
    const error = await failure({ caCertHashes: [PIN, 'sha256:0011223344'] });
    expect(error.code).toBe('E_CA_PIN_INVALID');
    expect(error.exitCode).toBe(3);
    expect(error.message).toBe(
      'invalid discovery token CA certificate hash: invalid hash "sha256:0011223344", expected a 32 byte SHA-256 hash, found 5 bytes',
    );
    expect(error.hints).toEqual([
      'A pin looks like sha256:<64 hex digits>. Print it on the control plane with "edgeadm certs ca-hash".',
    ]);
    expect((error.cause as { code?: string } | undefined)?.code).toBe('E_CA_PIN_INVALID');
  });

  it('refuses a malformed token', async () => {
    const error = await failure({ token: 'abcdef.0123456789ABCDEF' });
    expect(error.code).toBe('E_TOKEN_INVALID');
    expect(error.exitCode).toBe(3);
  });

  it('refuses a token object that holds no well-formed token, as a string would be', async () => {
    const error = await failure({ token: { id: 'ABCDEF', secret: '0123456789abcdef' } });
    expect(error.code).toBe('E_TOKEN_INVALID');
  });

  it('refuses a malformed endpoint and a non-positive timeout', async () => {
    expect((await failure({ endpoint: '10.0.0.10' })).code).toBe('E_DISCOVERY_ENDPOINT_INVALID');
    expect((await failure({ timeoutMs: 0 })).code).toBe('E_DISCOVERY_TIMEOUT_INVALID');
  });
});

/**
 * Discovery against a scripted HTTPS server on 127.0.0.1, with a CA made by
 * edgeadm's own PKI: kubeadm's anonymous cluster-info, k3s's `/cacerts`
 * with anonymous requests refused, and hostile answers. Real TLS, real
 * sockets, no sshd.
 */
const TOKEN: BootstrapToken = { id: 'abcdef', secret: '0123456789abcdef' };
const TOKEN_TEXT = 'abcdef.0123456789abcdef';
/** The address cluster-info advertises (not the one discovery asks). */
const ADVERTISED = 'https://10.0.0.10:6443';
/**
 * For cases that must end at once: far longer than they take, and short
 * enough that a broken check which makes discovery wait fails the test
 * quickly (with the wrong error) rather than at the test's own timeout.
 */
const NEVER_MS = 8_000;
/** For cases that must poll until the deadline: short, and far longer than a first answer from 127.0.0.1 takes. */
const SHORT_MS = 500;
const FAST_POLL_MS = 20;

let clusterCa: CertificateAuthority;
let serving: CertificateAndKey;
let impostorServing: CertificateAndKey;
let impostorCa: CertificateAuthority;
let pin: string;
let impostorPin: string;
let kubeconfig: string;

beforeAll(async () => {
  [clusterCa, impostorCa] = await Promise.all([
    createCa({ commonName: 'edge-cluster-ca' }),
    createCa({ commonName: 'edge-cluster-ca' }),
  ]);
  const names = { commonName: 'kube-apiserver', ipAddresses: ['127.0.0.1'], usages: ['server'] as const };
  [serving, impostorServing] = await Promise.all([
    issueCertificate({ ca: clusterCa, ...names }),
    issueCertificate({ ca: impostorCa, ...names }),
  ]);
  pin = caPinOf(new X509Certificate(clusterCa.certPem));
  impostorPin = caPinOf(new X509Certificate(impostorCa.certPem));
  kubeconfig = renderClusterInfoKubeconfig({ server: ADVERTISED, caPem: clusterCa.certPem });
});

let server: ScriptedHttpsServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(
  answer: (request: ScriptedRequest, index: number) => ScriptedAnswer,
  certificates: CertificateAndKey[] = [serving],
): Promise<ScriptedHttpsServer> {
  server = await startScriptedHttpsServer({ certificates, answer });
  return server;
}

function configMap(data: Record<string, string>): ScriptedAnswer {
  return {
    status: 200,
    body: JSON.stringify({
      kind: 'ConfigMap',
      apiVersion: 'v1',
      metadata: { name: 'cluster-info', namespace: 'kube-public' },
      data,
    }),
  };
}

/** cluster-info as kubeadm's API server holds it: the kubeconfig, signed for the token. */
function signedClusterInfo(options: { kubeconfig?: string; tokens?: BootstrapToken[] } = {}): ScriptedAnswer {
  return configMap(
    clusterInfoConfigMap({ kubeconfig: options.kubeconfig ?? kubeconfig, tokens: options.tokens ?? [TOKEN] }).data,
  );
}

function status(code: number, message: string, reason: string): ScriptedAnswer {
  return {
    status: code,
    body: JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code }),
  };
}

const UNAUTHORIZED = status(401, 'Unauthorized', 'Unauthorized');

/**
 * k3s's API server: anonymous requests refused (401), `/cacerts` open with
 * the bytes of its CA file, cluster-info for the bootstrap token.
 */
function k3sLike(options: { caBytes: string; clusterInfo?: () => ScriptedAnswer; tokenText?: string }) {
  return (request: ScriptedRequest): ScriptedAnswer => {
    if (request.path === K3S_CA_CERTS_PATH) return { status: 200, body: options.caBytes };
    if (request.authorization === `Bearer ${options.tokenText ?? TOKEN_TEXT}`) {
      return (options.clusterInfo ?? (() => signedClusterInfo()))();
    }
    return UNAUTHORIZED;
  };
}

/** k3s serves its CA file as it is on disk: here with a blank line that cluster-info does not have. */
const servedBytes = (): string => `${clusterCa.certPem.trimEnd()}\n\n`;

interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
}

function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    debug: (message) => lines.push({ level: 'debug', message }),
    info: (message) => lines.push({ level: 'info', message }),
    warn: (message) => lines.push({ level: 'warn', message }),
    error: (message) => lines.push({ level: 'error', message }),
  };
}

function discoverFrom(target: ScriptedHttpsServer | string, options: Partial<DiscoveryOptions> = {}) {
  return discoverClusterInfo({
    endpoint: typeof target === 'string' ? target : target.endpoint,
    token: TOKEN_TEXT,
    caCertHashes: [pin],
    timeoutMs: NEVER_MS,
    pollIntervalMs: FAST_POLL_MS,
    ...options,
  });
}

async function rejectionOf(promise: Promise<unknown>): Promise<EdgeadmError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof EdgeadmError) return error;
    throw error;
  }
  throw new Error('expected discovery to fail');
}

const ANONYMOUS_GET = {
  method: 'GET',
  path: CLUSTER_INFO_PATH,
  authorization: undefined,
  accept: 'application/json',
  userAgent: 'edgeadm-discovery',
};

describe('discovery against an API server that answers anonymous requests (kubeadm)', () => {
  it('takes the token parsed as well as text', async () => {
    const started = await serve(() => signedClusterInfo());
    const result = await discoverFrom(started, { token: { ...TOKEN } });
    expect(result.bootstrapKubeconfig).toBe(
      renderBootstrapKubeconfig({ server: ADVERTISED, caPem: clusterCa.certPem, token: TOKEN_TEXT }),
    );
  });

  it("tells the operator what it does, in kubeadm's words", async () => {
    const started = await serve(() => signedClusterInfo());
    const logger = recordingLogger();
    await discoverFrom(started, { logger });
    const endpoint = JSON.stringify(`https://${started.endpoint}`);
    expect(logger.lines.filter((line) => line.level === 'info')).toEqual([
      { level: 'info', message: `[discovery] Requesting cluster-info from ${endpoint} without TLS verification` },
      {
        level: 'info',
        message: `[discovery] Requesting cluster-info from ${endpoint} again to validate TLS against the pinned public key`,
      },
      {
        level: 'info',
        message: `[discovery] Cluster info signature and contents are valid and TLS certificate validates against pinned roots, will use API Server "${ADVERTISED}"`,
      },
    ]);
    expect(logger.lines).toContainEqual({
      level: 'debug',
      message: '[discovery] Waiting for the cluster-info ConfigMap to receive a JWS signature for token ID "abcdef"',
    });
    expect(JSON.stringify(logger.lines)).not.toContain(TOKEN.secret);
  });

  it('keeps asking while cluster-info is missing or not yet signed for the token, saying why', async () => {
    const started = await serve((_, index) => {
      if (index === 0) return status(404, 'configmaps "cluster-info" not found', 'NotFound');
      if (index === 1) return signedClusterInfo({ tokens: [] });
      return signedClusterInfo();
    });
    const logger = recordingLogger();
    const result = await discoverFrom(started, { logger });
    expect(result.isCaVerified).toBe(true);
    expect(started.requests).toHaveLength(4);
    const retries = logger.lines.filter((line) => line.message.startsWith('[discovery] Retrying due to error: '));
    // Warnings reach the terminal: each retry is shown as it happens (newcomer point 4).
    expect(retries.map((line) => line.level)).toEqual(['warn', 'warn']);
    expect(retries.map((line) => line.message)).toEqual([
      '[discovery] Retrying due to error: failed to request the cluster-info ConfigMap: configmaps "cluster-info" not found',
      '[discovery] Retrying due to error: could not find a JWS signature in the cluster-info ConfigMap for token ID "abcdef"',
    ]);
  });

  it('with the unsafe flag and no pin: one request, and a warning that names the CA it trusts unverified', async () => {
    const started = await serve(() => signedClusterInfo(), [impostorServing]);
    const logger = recordingLogger();
    const result = await discoverFrom(started, { caCertHashes: [], isUnsafeSkipCaVerification: true, logger });
    expect(result).toMatchObject({ isCaVerified: false, caPins: [pin], server: ADVERTISED });
    expect('matchedPin' in result).toBe(false);
    expect(started.requests).toHaveLength(1);
    expect(logger.lines.filter((line) => line.level === 'warn')).toEqual([
      {
        level: 'warn',
        message: `[discovery] Cluster info signature and contents are valid but no CA pin was given (--discovery-token-unsafe-skip-ca-verification): trusting CA ${pin} of ${ADVERTISED} unverified`,
      },
    ]);
  });

  it('connects through the agent it is given (an HTTP proxy), for both requests', async () => {
    const started = await serve(() => signedClusterInfo());
    let connections = 0;
    const agent = new HttpsAgent();
    const createConnection = agent.createConnection.bind(agent);
    agent.createConnection = (...args: Parameters<typeof createConnection>) => {
      connections += 1;
      return createConnection(...args);
    };
    try {
      await discoverFrom(started, { agent });
    } finally {
      agent.destroy();
    }
    expect(connections).toBe(2);
  });
});
describe('discovery refuses, with what was wrong', () => {
  it('a CA that is not the pinned one, after one request, naming both', async () => {
    const started = await serve(() => signedClusterInfo());
    const error = await rejectionOf(discoverFrom(started, { caCertHashes: [impostorPin] }));
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_PIN_MISMATCH',
      exitCode: 1,
      message: `cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "${pin}" are pinned`,
      details: { endpoint: `https://${started.endpoint}`, expected: [impostorPin], actual: [pin] },
    });
    expect(error.hints[0]).toContain('edgeadm certs ca-hash');
    expect(error.hints[1]).toContain('something is intercepting the connection');
    expect(started.requests).toHaveLength(1);
  });

  it('a signature made with another secret', async () => {
    const started = await serve(() => signedClusterInfo({ tokens: [{ id: TOKEN.id, secret: 'ffffffffffffffff' }] }));
    const error = await rejectionOf(discoverFrom(started));
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_JWS_INVALID',
      message: "failed to verify JWS signature of received cluster info object, can't trust this API Server",
    });
  });

  it('a server that presents another CA on the verified request, at once', async () => {
    const started = await serve(() => signedClusterInfo(), [serving, impostorServing]);
    const error = await rejectionOf(discoverFrom(started));
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_TLS_UNTRUSTED',
      message:
        'failed to request the cluster-info ConfigMap over TLS verified with the pinned cluster CA: unable to verify the first certificate',
      details: { endpoint: `https://${started.endpoint}`, attempts: 1 },
      hints: [
        `The certificate that https://${started.endpoint} presented does not verify against the CA that cluster-info pinned. Something between this host and the API server may be intercepting TLS.`,
        'If the address is right but missing from the API server certificate, add it to the certificate SANs and retry.',
      ],
    });
    expect(started.requests).toHaveLength(1);
  });

  it('a kubeconfig that changed between the two requests', async () => {
    const changed = renderClusterInfoKubeconfig({ server: 'https://10.0.0.99:6443', caPem: clusterCa.certPem });
    const started = await serve((_, index) => signedClusterInfo({ kubeconfig: index === 0 ? kubeconfig : changed }));
    const error = await rejectionOf(discoverFrom(started));
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_CHANGED',
      message:
        'the second kubeconfig from the cluster-info ConfigMap (using validated TLS) was different from the first',
      details: { endpoint: `https://${started.endpoint}` },
    });
    expect(error.hints[0]).toContain('cluster-info changed between the two requests');
  });

  it('a signed kubeconfig that is not a kubeconfig, naming where it came from', async () => {
    const started = await serve(() => signedClusterInfo({ kubeconfig: '- a list\n' }));
    const error = await rejectionOf(discoverFrom(started));
    expect(error).toMatchObject({
      code: 'E_KUBECONFIG_INVALID',
      message: "couldn't parse the kubeconfig file in the cluster-info ConfigMap: it is not a YAML mapping",
    });
  });

  it('with the unsafe flag, a warning that names every CA of a bundle', async () => {
    const bundle = renderClusterInfoKubeconfig({ server: ADVERTISED, caPem: impostorCa.certPem + clusterCa.certPem });
    const started = await serve(() => signedClusterInfo({ kubeconfig: bundle }));
    const logger = recordingLogger();
    await discoverFrom(started, { caCertHashes: [], isUnsafeSkipCaVerification: true, logger });
    expect(logger.lines.find((line) => line.level === 'warn')?.message).toContain(
      `trusting CA ${impostorPin}, ${pin} of ${ADVERTISED} unverified`,
    );
  });

  it('a signed kubeconfig whose CA is not a certificate', async () => {
    const broken = renderClusterInfoKubeconfig({ server: ADVERTISED, caPem: 'not a certificate' });
    const started = await serve(() => signedClusterInfo({ kubeconfig: broken }));
    const error = await rejectionOf(discoverFrom(started));
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_BAD_CA',
      message:
        'failed to parse cluster CA from the cluster-info ConfigMap: the cluster CA of the cluster-info ConfigMap does not contain any PEM certificate',
    });
  });
});
describe('discovery against an API server that refuses anonymous requests (k3s)', () => {
  it('checks /cacerts against the pin, then reads cluster-info with the token over TLS verified with that CA', async () => {
    const started = await serve(k3sLike({ caBytes: servedBytes() }));
    const logger = recordingLogger();
    const result = await discoverFrom(started, { logger });
    expect(result).toMatchObject({
      endpoint: `https://${started.endpoint}`,
      server: ADVERTISED,
      caPem: clusterCa.certPem,
      servedCaBundle: servedBytes(),
      matchedPin: pin,
      isCaVerified: true,
    });
    expect(started.requests).toEqual([
      { ...ANONYMOUS_GET, connection: 0 },
      { ...ANONYMOUS_GET, path: K3S_CA_CERTS_PATH, connection: 1 },
      { ...ANONYMOUS_GET, authorization: `Bearer ${TOKEN_TEXT}`, connection: 2 },
    ]);
    const endpoint = JSON.stringify(`https://${started.endpoint}`);
    expect(logger.lines.filter((line) => line.level === 'info').map((line) => line.message)).toEqual([
      `[discovery] Requesting cluster-info from ${endpoint} without TLS verification`,
      `[discovery] ${endpoint} refuses anonymous requests; requesting its CA bundle from /cacerts without TLS verification`,
      `[discovery] Requesting cluster-info from ${endpoint} over TLS verified with the pinned CA, with the bootstrap token`,
      `[discovery] Cluster info signature and contents are valid and TLS certificate validates against pinned roots, will use API Server "${ADVERTISED}"`,
    ]);
    expect(logger.lines).toContainEqual({
      level: 'debug',
      message: '[discovery] Requesting the CA bundle at /cacerts',
    });
  });

  it('without a pin it refuses at once, and sends the token nowhere', async () => {
    const started = await serve(k3sLike({ caBytes: servedBytes() }));
    const error = await rejectionOf(discoverFrom(started, { caCertHashes: [], isUnsafeSkipCaVerification: true }));
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_ANONYMOUS_REFUSED',
      message:
        'the API server refuses anonymous requests (Unauthorized), and without a CA pin discovery would have to send the token to a server nothing verified',
      details: { endpoint: `https://${started.endpoint}` },
    });
    expect(error.hints).toEqual([
      'This server (k3s, or kube-apiserver with --anonymous-auth=false) reads cluster-info only for the token, and the token is sent only over TLS verified with a pinned CA.',
      'Pass --discovery-token-ca-cert-hash sha256:<hash>; print the hash on the control plane with "edgeadm certs ca-hash".',
    ]);
    expect(started.requests.map((r) => r.path)).toEqual([CLUSTER_INFO_PATH]);
  });

  it('CA bytes at /cacerts that are not the pinned CA: refused before the token is sent', async () => {
    const started = await serve(k3sLike({ caBytes: impostorCa.certPem }), [impostorServing]);
    const error = await rejectionOf(discoverFrom(started));
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_PIN_MISMATCH',
      message: `cluster CA found in the CA bundle served at /cacerts is invalid: none of the public keys "${impostorPin}" are pinned`,
    });
    expect(started.requests.some((r) => r.authorization !== undefined)).toBe(false);
    expect(started.requests).toHaveLength(2);
  });

  it('/cacerts that is not a certificate', async () => {
    const started = await serve(k3sLike({ caBytes: 'hello' }));
    const error = await rejectionOf(discoverFrom(started));
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_BAD_CA',
      message:
        'failed to parse cluster CA from the CA bundle served at /cacerts: the cluster CA of the CA bundle served at /cacerts does not contain any PEM certificate',
    });
  });

  it('/cacerts refused as well: neither way is open', async () => {
    const started = await serve(() => UNAUTHORIZED);
    const error = await rejectionOf(discoverFrom(started));
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_ANONYMOUS_REFUSED',
      message: 'the API server refuses anonymous requests for cluster-info and for /cacerts (Unauthorized)',
      hints: [
        `Neither kubeadm's anonymous cluster-info nor k3s's /cacerts is open on https://${started.endpoint}: check that it is the cluster's API server.`,
      ],
      details: { endpoint: `https://${started.endpoint}` },
    });
  });

  it('the pinned CA at /cacerts but another certificate on the authenticated request: the token is not sent', async () => {
    const started = await serve(k3sLike({ caBytes: servedBytes() }), [serving, serving, impostorServing]);
    const error = await rejectionOf(discoverFrom(started));
    expect(error.code).toBe('E_DISCOVERY_TLS_UNTRUSTED');
    expect(started.requests.map((r) => r.authorization)).toEqual([undefined, undefined]);
    expect(started.connectionCount()).toBe(3);
  });

  it('a CA in cluster-info that is not the pinned one, though /cacerts was', async () => {
    const otherKubeconfig = renderClusterInfoKubeconfig({ server: ADVERTISED, caPem: impostorCa.certPem });
    const started = await serve(
      k3sLike({ caBytes: servedBytes(), clusterInfo: () => signedClusterInfo({ kubeconfig: otherKubeconfig }) }),
    );
    const error = await rejectionOf(discoverFrom(started));
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_PIN_MISMATCH',
      message: `cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "${impostorPin}" are pinned`,
    });
  });
});
describe('discovery option checks, exactly', () => {
  it.each([
    [{ timeoutMs: -1 }, 'the discovery timeout must be positive'],
    [{ timeoutMs: Number.NaN }, 'the discovery timeout must be positive'],
    [{ pollIntervalMs: 0 }, 'the discovery poll interval must be positive'],
    [{ pollIntervalMs: Number.NaN }, 'the discovery poll interval must be positive'],
  ])('%j', async (options, message) => {
    const error = await rejectionOf(discoverFrom(UNREACHABLE, options));
    expect(error).toMatchObject({ code: 'E_DISCOVERY_TIMEOUT_INVALID', exitCode: 3, message });
  });

  it.each([
    ['10.0.0.10:65535', { host: '10.0.0.10', port: 65535 }],
    ['edge-1:6443', { host: 'edge-1', port: 6443 }],
  ])('reads the endpoint %j', (endpoint, target) => {
    expect(parseDiscoveryEndpoint(endpoint)).toEqual(target);
  });

  it.each([
    ['10.0.0.10:65536', 'port 65536 is out of range'],
    ['10.0.0.10:6443x', 'expected host:port'],
    ['10.0.0.10:6443/', 'expected host:port'],
    ['x10.0.0.10:644300', 'expected host:port'],
    ['a:b:6443', 'expected host:port'],
    ['[::1]x:6443', 'expected host:port'],
  ])('refuses the endpoint %j: %s, with an example', (endpoint, why) => {
    expect(() => parseDiscoveryEndpoint(endpoint)).toThrow(
      expect.objectContaining({
        message: `invalid API server endpoint ${JSON.stringify(endpoint)}: ${why}`,
        hints: ['Pass the API server as host:port, for example 10.0.0.10:6443 or [fd00::10]:6443.'],
      }),
    );
  });
});

describe('discovery at the deadline (each of these waits for it)', () => {
  it('a token id the cluster never signed for: it asks until the deadline, then says so with the hints', async () => {
    const started = await serve(() => signedClusterInfo({ tokens: [{ id: 'zzzzzz', secret: TOKEN.secret }] }));
    const error = await rejectionOf(discoverFrom(started, { timeoutMs: SHORT_MS }));
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_NO_JWS',
      exitCode: 1,
      message: 'could not find a JWS signature in the cluster-info ConfigMap for token ID "abcdef"',
      details: { endpoint: `https://${started.endpoint}`, tokenId: 'abcdef', timeout: '500ms' },
    });
    // Every request the server saw was an attempt; the last attempt, cut short by the deadline, may not have reached it.
    const attempts = error.details?.attempts as number;
    expect(started.requests.length).toBeGreaterThan(1);
    expect(attempts).toBeGreaterThanOrEqual(started.requests.length);
    expect(attempts).toBeLessThanOrEqual(started.requests.length + 1);
    expect(error.hints).toEqual([
      'The cluster does not know token ID "abcdef", or it has expired, or it may not sign: create a new token on the control plane ("edgeadm token create") and use the join command it prints.',
      `Discovery asked ${attempts} times over 500ms; raise --discovery-timeout to wait longer.`,
    ]);
  });

  it('an answer larger than a ConfigMap can be, and reads one just within the bound', async () => {
    const signed = clusterInfoConfigMap({ kubeconfig, tokens: [TOKEN] }).data;
    const exact = (bytes: number): string => {
      const body = JSON.stringify({ kind: 'ConfigMap', data: signed });
      return body.slice(0, -1) + ' '.repeat(bytes - body.length) + '}';
    };
    const within = await serve(() => ({ status: 200, body: exact(MAX_CLUSTER_INFO_RESPONSE_BYTES) }));
    expect((await discoverFrom(within)).isCaVerified).toBe(true);
    await within.close();

    const over = await serve(() => ({ status: 200, body: exact(MAX_CLUSTER_INFO_RESPONSE_BYTES + 1) }));
    const error = await rejectionOf(discoverFrom(over, { timeoutMs: SHORT_MS }));
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_TIMEOUT',
      message: `failed to request the cluster-info ConfigMap: the response is larger than ${MAX_CLUSTER_INFO_RESPONSE_BYTES} bytes`,
    });
    expect(error.hints).toEqual([
      `Check that https://${over.endpoint} is the API server and that this host can reach it.`,
      expect.stringMatching(/^Discovery asked \d+ times over 500ms; raise --discovery-timeout to wait longer\.$/),
    ]);
  });

  it('a redirect: it is not followed', async () => {
    const elsewhere = await startScriptedHttpsServer({ certificates: [serving], answer: () => signedClusterInfo() });
    try {
      const started = await serve(() => ({
        status: 302,
        headers: { Location: `https://${elsewhere.endpoint}${CLUSTER_INFO_PATH}` },
      }));
      const error = await rejectionOf(discoverFrom(started, { timeoutMs: SHORT_MS }));
      expect(error).toMatchObject({
        code: 'E_DISCOVERY_TIMEOUT',
        message: 'failed to request the cluster-info ConfigMap: the server answered HTTP 302 Found',
      });
      expect(elsewhere.requests).toEqual([]);
    } finally {
      await elsewhere.close();
    }
  });

  it("an error Status: its message, as the API server's own words", async () => {
    const started = await serve(() => status(500, 'etcdserver: request timed out', 'InternalError'));
    const error = await rejectionOf(discoverFrom(started, { timeoutMs: SHORT_MS }));
    expect(error.message).toBe('failed to request the cluster-info ConfigMap: etcdserver: request timed out');
  });

  it.each([
    ['a body that is not JSON', '<html>', 'HTTP 503 Service Unavailable'],
    ['JSON that is not a Status', '{"kind":"Other","message":"x"}', 'HTTP 503 Service Unavailable'],
    ['a Status whose message is not text', '{"kind":"Status","message":5}', 'HTTP 503 Service Unavailable'],
  ])('an error with %s: the HTTP status', async (_, body, what) => {
    const started = await serve(() => ({ status: 503, body }));
    const error = await rejectionOf(discoverFrom(started, { timeoutMs: SHORT_MS }));
    expect(error.message).toBe(`failed to request the cluster-info ConfigMap: the server answered ${what}`);
  });

  it('an error without a reason phrase: the bare HTTP status', async () => {
    const started = await serve(() => ({ status: 503, reason: '' }));
    const error = await rejectionOf(discoverFrom(started, { timeoutMs: SHORT_MS }));
    expect(error.message).toBe('failed to request the cluster-info ConfigMap: the server answered HTTP 503');
  });

  it('an answer that is not a ConfigMap', async () => {
    const started = await serve(() => ({ status: 200, body: 'not json' }));
    const error = await rejectionOf(discoverFrom(started, { timeoutMs: SHORT_MS }));
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_TIMEOUT',
      message: expect.stringMatching(
        /^failed to request the cluster-info ConfigMap: the cluster-info ConfigMap response is not JSON: /,
      ),
    });
  });

  it('a connection cut in the middle of the answer', async () => {
    const started = await serve(() => ({ cut: true }));
    const error = await rejectionOf(discoverFrom(started, { timeoutMs: SHORT_MS }));
    expect(error).toMatchObject({ code: 'E_DISCOVERY_TIMEOUT' });
    expect(error.message).toMatch(/^failed to request the cluster-info ConfigMap: aborted$/);
  });

  it('reports the last error, not the first', async () => {
    const started = await serve((_, index) =>
      index === 0
        ? status(404, 'configmaps "cluster-info" not found', 'NotFound')
        : status(500, 'etcdserver: leader changed', 'InternalError'),
    );
    const error = await rejectionOf(discoverFrom(started, { timeoutMs: SHORT_MS }));
    expect(error.message).toBe('failed to request the cluster-info ConfigMap: etcdserver: leader changed');
  });

  it('a server that answers the unverified request and refuses the verified one: it keeps asking, then fails typed', async () => {
    const started = await serve((_, index) => (index === 0 ? signedClusterInfo() : UNAUTHORIZED));
    const error = await rejectionOf(discoverFrom(started, { timeoutMs: SHORT_MS }));
    expect(error.code).toBe('E_DISCOVERY_NO_JWS');
    expect(started.requests.length).toBeGreaterThan(2);
    expect(started.requests.every((r) => r.authorization === undefined)).toBe(true);
  });

  it('a server that takes the request and never answers: it gives up at the deadline', async () => {
    const started = await serve(() => ({ hang: true }));
    const error = await rejectionOf(discoverFrom(started, { timeoutMs: SHORT_MS }));
    expect(error).toMatchObject({ code: 'E_DISCOVERY_TIMEOUT', details: { attempts: 1, timeout: '500ms' } });
    expect(error.message).toMatch(/^failed to request the cluster-info ConfigMap: no answer within \d+ms$/);
  });

  it('keeps the error from before the deadline rather than the request the deadline cut short', async () => {
    const started = await serve((_, index) => (index === 0 ? signedClusterInfo({ tokens: [] }) : { hang: true }));
    const error = await rejectionOf(discoverFrom(started, { timeoutMs: SHORT_MS }));
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_NO_JWS',
      message: 'could not find a JWS signature in the cluster-info ConfigMap for token ID "abcdef"',
    });
  });

  it('a server that accepts connections and never speaks TLS', async () => {
    const held: Socket[] = [];
    const silent = createNetServer((socket) => {
      held.push(socket);
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      const error = await rejectionOf(discoverFrom(`127.0.0.1:${port}`, { timeoutMs: SHORT_MS }));
      expect(error.code).toBe('E_DISCOVERY_TIMEOUT');
      expect(error.message).toMatch(/^failed to request the cluster-info ConfigMap: no answer within \d+ms$/);
    } finally {
      for (const socket of held) socket.destroy();
      silent.close();
    }
  });

  it('names an IPv6 endpoint in brackets', async () => {
    const error = await rejectionOf(discoverFrom('[::1]:1', { timeoutMs: 50 }));
    expect(error.code).toBe('E_DISCOVERY_TIMEOUT');
    expect(error.details).toMatchObject({ endpoint: 'https://[::1]:1' });
    expect(error.hints[0]).toBe('Check that https://[::1]:1 is the API server and that this host can reach it.');
  });

  it('a token the server refuses: kubeadm words for an unknown token, with the refusal, after the deadline', async () => {
    const started = await serve(k3sLike({ caBytes: servedBytes(), tokenText: 'zzzzzz.0123456789abcdef' }));
    const error = await rejectionOf(discoverFrom(started, { timeoutMs: SHORT_MS }));
    expect(error).toMatchObject({
      code: 'E_DISCOVERY_NO_JWS',
      message:
        'could not find a JWS signature in the cluster-info ConfigMap for token ID "abcdef": the API server refused the token (Unauthorized)',
    });
    expect(error.hints[0]).toContain('The cluster does not know token ID "abcdef"');
    expect(started.requests.filter((r) => r.authorization === `Bearer ${TOKEN_TEXT}`).length).toBeGreaterThan(1);
  });

  it('/cacerts that never answers: the deadline, with what was asked', async () => {
    const started = await serve((request) => (request.path === K3S_CA_CERTS_PATH ? { hang: true } : UNAUTHORIZED));
    const error = await rejectionOf(discoverFrom(started, { timeoutMs: SHORT_MS }));
    expect(error).toMatchObject({ code: 'E_DISCOVERY_TIMEOUT' });
    expect(error.message).toMatch(/^failed to request \/cacerts: no answer within \d+ms$/);
  });

  it('asks no more often than the timeout when the interval is longer', async () => {
    const started = await serve(() => signedClusterInfo({ tokens: [] }));
    const error = await rejectionOf(discoverFrom(started, { timeoutMs: SHORT_MS, pollIntervalMs: NEVER_MS }));
    expect(error.code).toBe('E_DISCOVERY_NO_JWS');
  });
});

/** Last: a broken check that makes discovery wait would hold this test until its own timeout (discovery's default is 5 minutes). */
describe('discovery with every default', () => {
  it('returns the bootstrap kubeconfig after two anonymous requests, on two connections (default timeout, interval and logger)', async () => {
    const started = await serve(() => signedClusterInfo());
    const result = await discoverClusterInfo({ endpoint: started.endpoint, token: TOKEN_TEXT, caCertHashes: [pin] });
    // Strict: no servedCaBundle key at all on this path, not even an undefined one.
    expect(result).toStrictEqual({
      endpoint: `https://${started.endpoint}`,
      server: ADVERTISED,
      caPem: clusterCa.certPem,
      caPins: [pin],
      matchedPin: pin,
      isCaVerified: true,
      clusterInfoKubeconfig: kubeconfig,
      bootstrapKubeconfig: renderBootstrapKubeconfig({
        server: ADVERTISED,
        caPem: clusterCa.certPem,
        token: TOKEN_TEXT,
      }),
    });
    expect(started.requests).toEqual([
      { ...ANONYMOUS_GET, connection: 0 },
      { ...ANONYMOUS_GET, connection: 1 },
    ]);
  });
});
