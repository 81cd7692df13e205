/**
 * Every node workflow parses its one request before any I/O: init, join and
 * reset, and each phase run alone (`init phase <name>`, `join phase <name>`,
 * `join phase discovery`). Each case runs the built CLI with one malformed
 * input and a valid install package, against a TCP listener that stands in
 * for the SSH host (and, for join, for the API server too) and counts every
 * connection edgeadm opens: the answer must be the input's own error code,
 * with no connection made.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initPhases } from '../../../src/cluster/init.js';
import { joinPhases } from '../../../src/cluster/join.js';
import { flattenPhases } from '../../../src/workflow/phase.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli } from '../../support/cli.js';
import { buildFixturePackage } from '../../support/package-fixtures.js';

const GOOD_TOKEN = 'abcdef.0123456789abcdef';
const GOOD_PIN = `sha256:${'a'.repeat(64)}`;
/** Each CLI run starts a Node process; the phase loops run many. */
const LOOP_TIMEOUT_MS = 240_000;

/** A listener that counts the TCP connections made to it and closes each at once. */
interface ConnectionTrap {
  port: number;
  connections: number;
  server: Server;
}

let dir: string;
let pkg: string;
let trap: ConnectionTrap;

beforeAll(async () => {
  ensureCliBuilt('commands/init.js', ['src']);
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-requests-'));
  pkg = (await buildFixturePackage(dir)).file;
  const server = createServer((socket) => {
    trap.connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  trap = { port: (server.address() as AddressInfo).port, connections: 0, server };
});

afterAll(async () => {
  await new Promise((resolve) => trap?.server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** The SSH flags that send any connection attempt to the trap. */
function trapHost(): string[] {
  return ['--host', `root@127.0.0.1:${trap.port}`, '--ssh-timeout', '2'];
}

/** The trap as an API server endpoint (join's discovery would connect there). */
function trapEndpoint(): string {
  return `127.0.0.1:${trap.port}`;
}

/** Runs edgeadm with --json; returns the error code and how many connections the trap saw. */
async function refusal(args: string[]): Promise<{ exitCode: number; code: string | undefined; connections: number }> {
  const before = trap.connections;
  const { exitCode, stdout } = await runCli([...args, '--json']);
  let code: string | undefined;
  try {
    code = (JSON.parse(stdout) as { error?: { code?: string } }).error?.code;
  } catch {
    code = undefined;
  }
  return { exitCode, code, connections: trap.connections - before };
}

/** The generated phase commands of a tree, as argv (`['init', 'phase', 'bootstrap-token']`). */
function phaseCommands(workflow: 'init' | 'join'): string[][] {
  const phases = workflow === 'init' ? flattenPhases(initPhases()) : flattenPhases(joinPhases());
  return phases
    .filter(({ path, phase }) => !phase.hidden && !(workflow === 'join' && path === 'discovery'))
    .map(({ path }) => [workflow, 'phase', ...path.split('/')]);
}

describe('the trap counts connections', () => {
  it('a well-formed init reaches the host, so the trap sees it', async () => {
    const result = await refusal(['init', '--install-pkg-path', pkg, ...trapHost()]);
    expect(result.exitCode).not.toBe(0);
    expect(result.connections).toBeGreaterThan(0);
  });
});

describe('init refuses malformed input with no connection made', () => {
  it.each([
    ['a malformed --token', ['--token', 'BADTOKEN'], 'E_TOKEN_INVALID'],
    ['a malformed --token-ttl', ['--token-ttl', '5 minutes'], 'E_DURATION_INVALID'],
    ['a negative --token-ttl', ['--token-ttl=-1h'], 'E_DURATION_INVALID'],
    [
      'a malformed --control-plane-endpoint',
      ['--control-plane-endpoint', 'bad_host:6443'],
      'E_DISCOVERY_ENDPOINT_INVALID',
    ],
    [
      'an --apiserver-advertise-address that is not an IP',
      ['--apiserver-advertise-address', 'cp.example'],
      'E_FLAG_INVALID',
    ],
    ['a malformed --pod-network-cidr', ['--pod-network-cidr', '10.42.0.0/40'], 'E_FLAG_INVALID'],
    ['a label Kubernetes refuses', ['--node-labels', 'bad key=x'], 'E_FLAG_INVALID'],
    ['an unknown --skip-phases name', ['--skip-phases', 'no-such-phase'], 'E_UNKNOWN_PHASE'],
  ])('%s', async (_name, flags, code) => {
    const result = await refusal(['init', '--install-pkg-path', pkg, ...flags, ...trapHost()]);
    expect(result).toEqual({ exitCode: 3, code, connections: 0 });
  });
});

describe('join refuses malformed input with no connection made', () => {
  const pins = ['--discovery-token-ca-cert-hash', GOOD_PIN];
  it.each([
    ['a malformed token', [trapEndpoint, '--token', 'BADTOKEN', ...pins], 'E_TOKEN_INVALID'],
    [
      'a malformed pin',
      [trapEndpoint, '--token', GOOD_TOKEN, '--discovery-token-ca-cert-hash', 'sha256:abc'],
      'E_CA_PIN_INVALID',
    ],
    ['no pin', [trapEndpoint, '--token', GOOD_TOKEN], 'E_DISCOVERY_NO_PIN'],
    ['a malformed endpoint', [() => 'bad_host:6443', '--token', GOOD_TOKEN, ...pins], 'E_DISCOVERY_ENDPOINT_INVALID'],
    ['an endpoint without a port', [() => '127.0.0.1', '--token', GOOD_TOKEN, ...pins], 'E_DISCOVERY_ENDPOINT_INVALID'],
    [
      'a malformed --discovery-timeout',
      [trapEndpoint, '--token', GOOD_TOKEN, ...pins, '--discovery-timeout', '5 minutes'],
      'E_DURATION_INVALID',
    ],
    [
      '--control-plane with --enable-edge',
      [
        trapEndpoint,
        '--token',
        GOOD_TOKEN,
        ...pins,
        '--control-plane',
        '--certificate-key',
        'a'.repeat(64),
        '--enable-edge',
      ],
      'E_FLAG_CONFLICT',
    ],
  ] as Array<[string, Array<string | (() => string)>, string]>)('%s', async (_name, args, code) => {
    const argv = args.map((arg) => (typeof arg === 'string' ? arg : arg()));
    const result = await refusal(['join', ...argv, '--install-pkg-path', pkg, ...trapHost()]);
    expect(result).toEqual({ exitCode: 3, code, connections: 0 });
  });
});

describe('reset refuses malformed input with no connection made', () => {
  it.each([
    ['an unknown --skip-phases name', ['--force', '--skip-phases', 'no-such-phase'], 'E_UNKNOWN_PHASE'],
    ['an unknown --distribution', ['--force', '--distribution', 'microk8s'], 'E_DISTRIBUTION_UNKNOWN'],
    ['neither --force nor --dry-run', [], 'E_RESET_NOT_CONFIRMED'],
  ])('%s', async (_name, flags, code) => {
    const result = await refusal(['reset', ...flags, ...trapHost()]);
    expect(result).toEqual({ exitCode: 3, code, connections: 0 });
  });
});

describe('each phase run alone refuses malformed input with no connection made', () => {
  it('has the phase commands it means to run', () => {
    expect(phaseCommands('init').map((argv) => argv.slice(2).join('/'))).toEqual([
      'preflight',
      'package',
      'runtime',
      'egress-selector',
      'control-plane',
      'wait-ready',
      'bootstrap-token',
      'record-package',
      'upload-certs',
      'edge-addons',
      'edge-kube-proxy',
      'edge-autonomy',
      'edge-site-grids',
      'node-tunnel',
      'show-join-command',
    ]);
    expect(phaseCommands('join').map((argv) => argv.slice(2).join('/'))).toEqual([
      'preflight',
      'package',
      'runtime',
      'node-join',
      'egress-selector',
      'control-plane-join',
      'edge',
      'wait-ready',
      'labels',
      'node-tunnel',
    ]);
  });

  it(
    'init phase <name> with a malformed --token',
    async () => {
      const outcomes: Array<[string, unknown]> = [];
      for (const argv of phaseCommands('init')) {
        const result = await refusal([...argv, '--install-pkg-path', pkg, '--token', 'BADTOKEN', ...trapHost()]);
        outcomes.push([argv.join(' '), result]);
      }
      expect(outcomes).toEqual(
        phaseCommands('init').map((argv) => [argv.join(' '), { exitCode: 3, code: 'E_TOKEN_INVALID', connections: 0 }]),
      );
    },
    LOOP_TIMEOUT_MS,
  );

  it(
    'join phase <name> with a malformed endpoint',
    async () => {
      const outcomes: Array<[string, unknown]> = [];
      for (const argv of phaseCommands('join')) {
        const result = await refusal([
          ...argv,
          'bad_host:6443',
          '--token',
          GOOD_TOKEN,
          '--discovery-token-ca-cert-hash',
          GOOD_PIN,
          '--install-pkg-path',
          pkg,
          ...trapHost(),
        ]);
        outcomes.push([argv.join(' '), result]);
      }
      expect(outcomes).toEqual(
        phaseCommands('join').map((argv) => [
          argv.join(' '),
          { exitCode: 3, code: 'E_DISCOVERY_ENDPOINT_INVALID', connections: 0 },
        ]),
      );
    },
    LOOP_TIMEOUT_MS,
  );

  it.each([
    [
      'a malformed token',
      [trapEndpoint, '--token', 'BADTOKEN', '--discovery-token-ca-cert-hash', GOOD_PIN],
      'E_TOKEN_INVALID',
    ],
    [
      'a malformed pin',
      [trapEndpoint, '--token', GOOD_TOKEN, '--discovery-token-ca-cert-hash', 'sha256:abc'],
      'E_CA_PIN_INVALID',
    ],
    [
      'a malformed endpoint',
      [() => 'bad_host:6443', '--token', GOOD_TOKEN, '--discovery-token-ca-cert-hash', GOOD_PIN],
      'E_DISCOVERY_ENDPOINT_INVALID',
    ],
    [
      'a non-positive --discovery-timeout',
      [trapEndpoint, '--token', GOOD_TOKEN, '--discovery-token-ca-cert-hash', GOOD_PIN, '--discovery-timeout', '0s'],
      'E_DURATION_INVALID',
    ],
  ] as Array<[string, Array<string | (() => string)>, string]>)(
    'join phase discovery with %s',
    async (_name, args, code) => {
      const argv = args.map((arg) => (typeof arg === 'string' ? arg : arg()));
      const result = await refusal(['join', 'phase', 'discovery', ...argv]);
      expect(result).toEqual({ exitCode: 3, code, connections: 0 });
    },
  );
});
