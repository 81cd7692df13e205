/**
 * `edgeadm join phase discovery`, run as the built CLI against the
 * cluster-info test server: exit codes, messages, and that nothing is
 * written on failure.
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  formatBootstrapToken,
  generateBootstrapToken,
  type BootstrapToken,
} from '../../../src/trust/bootstrap-token.js';
import { caPinOf } from '../../../src/trust/ca-pin.js';
import { clusterInfoConfigMap } from '../../../src/trust/cluster-info.js';
import { renderBootstrapKubeconfig, renderClusterInfoKubeconfig } from '../../../src/trust/kubeconfig.js';
import { createCa, issueCertificate, type CertificateAuthority } from '../../../src/trust/pki.js';
import { runCli, type CliResult } from '../../support/cli.js';
import { startClusterInfoTestServer, type ClusterInfoTestServer } from '../../support/cluster-info-server.js';

const ADVERTISED_SERVER = 'https://10.0.0.10:6443';

let dir: string;
let clusterCa: CertificateAuthority;
let clusterPin: string;
let token: BootstrapToken;
let kubeconfig: string;
let server: ClusterInfoTestServer;
/** A fresh --output path per test, in a directory that holds nothing else. */
let outputDir: string;
let output: string;

function discovery(...extra: string[]): Promise<CliResult> {
  return runCli(['join', 'phase', 'discovery', server.endpoint, ...extra]);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-join-discovery-'));
  clusterCa = await createCa({ commonName: 'edge-cluster-ca' });
  clusterPin = caPinOf(new X509Certificate(clusterCa.certPem));
  token = generateBootstrapToken();
  kubeconfig = renderClusterInfoKubeconfig({ server: ADVERTISED_SERVER, caPem: clusterCa.certPem });
  server = await startClusterInfoTestServer({
    certificates: [
      await issueCertificate({
        ca: clusterCa,
        commonName: 'kube-apiserver',
        ipAddresses: ['127.0.0.1'],
        usages: ['server'],
      }),
    ],
    data: () => clusterInfoConfigMap({ kubeconfig, tokens: [token] }).data,
  });
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  outputDir = mkdtempSync(join(dir, 'out-'));
  output = join(outputDir, 'bootstrap-kubelet.conf');
  server.requests.length = 0;
});
afterEach(() => {
  // On failure nothing may be written: not the file, not a temporary file.
  if (!existsSync(output)) expect(readdirSync(outputDir)).toEqual([]);
});

describe('join phase discovery succeeds', () => {
  it('writes the verified bootstrap kubeconfig to --output with mode 0600', async () => {
    const result = await discovery(
      '--token',
      formatBootstrapToken(token),
      '--discovery-token-ca-cert-hash',
      clusterPin,
      '-o',
      output,
    );
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(readFileSync(output, 'utf8')).toBe(
      renderBootstrapKubeconfig({
        server: ADVERTISED_SERVER,
        caPem: clusterCa.certPem,
        token: formatBootstrapToken(token),
      }),
    );
    expect(statSync(output).mode & 0o777).toBe(0o600);
    expect(readdirSync(outputDir)).toEqual(['bootstrap-kubelet.conf']);
    expect(result.stdout).toBe(
      `[discovery] verified ${ADVERTISED_SERVER}, CA verified by pin ${clusterPin}; wrote the bootstrap kubeconfig to ${output}\n`,
    );
  });

  it('prints the kubeconfig alone on stdout without --output', async () => {
    const result = await discovery(
      '--token',
      formatBootstrapToken(token),
      '--discovery-token-ca-cert-hash',
      clusterPin,
    );
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(
      renderBootstrapKubeconfig({
        server: ADVERTISED_SERVER,
        caPem: clusterCa.certPem,
        token: formatBootstrapToken(token),
      }),
    );
    expect(result.stderr).toBe(`[discovery] verified ${ADVERTISED_SERVER}, CA verified by pin ${clusterPin}\n`);
  });

  it('prints one JSON document with --json, naming the file instead of its content', async () => {
    const result = await discovery(
      '--token',
      formatBootstrapToken(token),
      '--discovery-token-ca-cert-hash',
      clusterPin.toUpperCase(),
      '--output',
      output,
      '--json',
    );
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      endpoint: `https://${server.endpoint}`,
      server: ADVERTISED_SERVER,
      caPins: [clusterPin],
      matchedPin: clusterPin,
      isCaVerified: true,
      output,
    });
    expect(existsSync(output)).toBe(true);
  });

  it('warns on stderr when the CA is accepted without a pin', async () => {
    const result = await discovery(
      '--token',
      formatBootstrapToken(token),
      '--discovery-token-unsafe-skip-ca-verification',
      '-o',
      output,
    );
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toContain(
      'warning: [discovery] Cluster info signature and contents are valid but no CA pin was given',
    );
    expect(result.stdout).toContain('CA NOT verified');
    expect(existsSync(output)).toBe(true);
  });
});

describe('join phase discovery refuses, writes nothing, and exits non-zero', () => {
  it('a wrong pin (exit 1)', async () => {
    const wrongPin = `sha256:${'0'.repeat(64)}`;
    const result = await discovery(
      '--token',
      formatBootstrapToken(token),
      '--discovery-token-ca-cert-hash',
      wrongPin,
      '-o',
      output,
    );
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(
      `error: cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "${clusterPin}" are pinned`,
    );
    expect(result.stderr).toContain('code: E_DISCOVERY_PIN_MISMATCH');
    expect(existsSync(output)).toBe(false);
  });

  it('a wrong token secret (exit 1), without printing the secret', async () => {
    const wrong = `${token.id}.${'q'.repeat(16)}`;
    const result = await discovery('--token', wrong, '--discovery-token-ca-cert-hash', clusterPin, '-o', output);
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(
      "error: failed to verify JWS signature of received cluster info object, can't trust this API Server",
    );
    expect(result.stderr).not.toContain('q'.repeat(16));
    expect(existsSync(output)).toBe(false);
  });

  it('an unknown token id, after --discovery-timeout (exit 1)', async () => {
    const result = await discovery(
      '--token',
      'zzzzzz.0123456789abcdef',
      '--discovery-token-ca-cert-hash',
      clusterPin,
      '--discovery-timeout',
      '1s',
      '-o',
      output,
    );
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(
      'error: could not find a JWS signature in the cluster-info ConfigMap for token ID "zzzzzz"',
    );
    expect(result.stderr).toContain('code: E_DISCOVERY_NO_JWS');
    expect(existsSync(output)).toBe(false);
  });

  it('neither a pin nor the unsafe flag (exit 3), before contacting the server, explaining both', async () => {
    const result = await discovery('--token', formatBootstrapToken(token), '-o', output);
    expect(result.exitCode).toBe(3);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(
      'error: using token-based discovery without --discovery-token-ca-cert-hash can be unsafe',
    );
    expect(result.stderr).toContain('--discovery-token-ca-cert-hash sha256:<hash>');
    expect(result.stderr).toContain('--discovery-token-unsafe-skip-ca-verification');
    expect(server.requests).toHaveLength(0);
    expect(existsSync(output)).toBe(false);
  });

  it('a malformed pin, token, timeout or missing output directory (exit 3)', async () => {
    const cases: Array<[string[], string]> = [
      [
        ['--token', formatBootstrapToken(token), '--discovery-token-ca-cert-hash', 'sha256:00'],
        'error: invalid discovery token CA certificate hash: invalid hash "sha256:00", expected a 32 byte SHA-256 hash, found 1 bytes',
      ],
      [
        ['--token', 'abc', '--discovery-token-ca-cert-hash', clusterPin],
        'error: the bootstrap token is not of the form',
      ],
      [
        [
          '--token',
          formatBootstrapToken(token),
          '--discovery-token-ca-cert-hash',
          clusterPin,
          '--discovery-timeout',
          '5 minutes',
        ],
        'error: invalid --discovery-timeout: invalid duration "5 minutes"',
      ],
      [
        [
          '--token',
          formatBootstrapToken(token),
          '--discovery-token-ca-cert-hash',
          clusterPin,
          '-o',
          join(outputDir, 'no/such/dir.conf'),
        ],
        `error: cannot write ${join(outputDir, 'no/such/dir.conf')}`,
      ],
    ];
    for (const [args, message] of cases) {
      const result = await discovery(...args);
      expect(result.exitCode, message).toBe(3);
      expect(result.stderr).toContain(message);
    }
    expect(server.requests).toHaveLength(0);
  });

  it('--token missing (exit 3, a usage error)', async () => {
    const result = await discovery('--discovery-token-ca-cert-hash', clusterPin);
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain('code: E_USAGE');
  });

  it('with --json, prints the error as one JSON document', async () => {
    const result = await discovery(
      '--token',
      `${token.id}.${'q'.repeat(16)}`,
      '--discovery-token-ca-cert-hash',
      clusterPin,
      '--json',
    );
    expect(result.exitCode).toBe(1);
    const document = JSON.parse(result.stdout) as { error: { code: string; message: string; exitCode: number } };
    expect(document.error).toMatchObject({
      code: 'E_DISCOVERY_JWS_INVALID',
      exitCode: 1,
      message: "failed to verify JWS signature of received cluster info object, can't trust this API Server",
    });
  });
});

describe('join phase discovery keeps the token secret out of logs', () => {
  it('redacts --token in the run log, also with --verbose', async () => {
    const logFile = join(dir, 'discovery.log');
    const result = await discovery(
      '--token',
      formatBootstrapToken(token),
      '--discovery-token-ca-cert-hash',
      clusterPin,
      '-o',
      output,
      '--verbose',
      '--log-file',
      logFile,
    );
    expect(result.exitCode).toBe(0);
    const log = readFileSync(logFile, 'utf8');
    expect(log).toContain('[discovery] Requesting cluster-info');
    expect(log).toContain('--token <redacted>');
    expect(log).not.toContain(token.secret);
    expect(result.stderr).not.toContain(token.secret);
  });
});
