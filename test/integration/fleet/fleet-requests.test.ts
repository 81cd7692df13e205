/**
 * The fleet commands parse their one request before any I/O. Each case runs
 * the built CLI with one malformed input over an inventory whose hosts (and
 * join's API server) are a TCP listener that counts every connection: the
 * answer must be the input's own error code, with no connection made.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli } from '../../support/cli.js';

const GOOD_TOKEN = 'abcdef.0123456789abcdef';
const GOOD_PIN = `sha256:${'a'.repeat(64)}`;

let dir: string;
let inventory: string;
let trap: { port: number; connections: number; server: Server };

beforeAll(async () => {
  ensureCliBuilt('commands/fleet/join.js', ['src']);
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-fleet-requests-'));
  const server = createServer((socket) => {
    trap.connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  trap = { port: (server.address() as AddressInfo).port, connections: 0, server };
  inventory = join(dir, 'fleet.yaml');
  writeFileSync(
    inventory,
    [
      'kind: FleetInventory',
      `ssh: { user: root, port: ${trap.port} }`,
      'controlPlane: { hosts: { cp1: { address: 127.0.0.1 } } }',
      'nodeGroups: { stores: { hosts: { store-1: { address: 127.0.0.1 } } } }',
      '',
    ].join('\n'),
  );
});

afterAll(async () => {
  await new Promise((resolve) => trap?.server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** Runs edgeadm with --json; returns the error code and how many connections the trap saw. */
async function refusal(args: string[]): Promise<{ exitCode: number; code: string | undefined; connections: number }> {
  const before = trap.connections;
  const { exitCode, stdout } = await runCli([...args, '-i', inventory, '--ssh-timeout', '2', '--json'], {
    env: { EDGEADM_HOME: join(dir, 'home') },
  });
  let code: string | undefined;
  try {
    code = (JSON.parse(stdout) as { error?: { code?: string } }).error?.code;
  } catch {
    code = undefined;
  }
  return { exitCode, code, connections: trap.connections - before };
}

/** fleet join's arguments with the trap as the API server; `change` replaces flags. (Called in the tests: the trap listens only then.) */
function joinArgs(change: Record<string, string> = {}): string[] {
  const flags = {
    '--endpoint': `127.0.0.1:${trap.port}`,
    '--token': GOOD_TOKEN,
    '--discovery-token-ca-cert-hash': GOOD_PIN,
    ...change,
  };
  return ['fleet', 'join', ...Object.entries(flags).flatMap(([flag, value]) => [flag, value])];
}

describe('the trap counts connections', () => {
  it('a well-formed fleet check reaches the hosts, so the trap sees it', async () => {
    const result = await refusal(['fleet', 'check']);
    expect(result.exitCode).not.toBe(0);
    expect(result.connections).toBeGreaterThan(0);
  });
});

describe('the fleet commands refuse malformed input with no connection made', () => {
  it.each([
    ['fleet join: a malformed --token', () => joinArgs({ '--token': 'BADTOKEN' }), 'E_TOKEN_INVALID'],
    [
      'fleet join: a malformed pin',
      () => joinArgs({ '--discovery-token-ca-cert-hash': 'sha256:abc' }),
      'E_CA_PIN_INVALID',
    ],
    [
      'fleet join: a malformed --discovery-timeout',
      () => joinArgs({ '--discovery-timeout': 'soon' }),
      'E_DURATION_INVALID',
    ],
    ['fleet join: an unknown phase to skip', () => joinArgs({ '--skip-phases': 'no-such-phase' }), 'E_UNKNOWN_PHASE'],
    ['fleet join: a malformed --wave-size', () => joinArgs({ '--wave-size': 'twenty' }), 'E_USAGE'],
    [
      'fleet upgrade: a malformed --drain-timeout',
      () => ['fleet', 'upgrade', '--install-pkg-path', 'pkg.tar.gz', '--drain-timeout', 'soon'],
      'E_DURATION_INVALID',
    ],
    [
      'fleet upgrade: a malformed window',
      () => [
        'fleet',
        'upgrade',
        '--install-pkg-path',
        'pkg.tar.gz',
        '--window-start',
        '25:00',
        '--window-end',
        '04:00',
      ],
      'E_FLEET_WINDOW',
    ],
    ['fleet reset: no --force', () => ['fleet', 'reset'], 'E_RESET_NOT_CONFIRMED'],
    ['fleet up: a malformed --max-failures', () => ['fleet', 'up', '--max-failures', 'many'], 'E_USAGE'],
  ])('%s', async (_name, args, code) => {
    const result = await refusal(args());
    expect(result).toEqual({ exitCode: 3, code, connections: 0 });
  });
});
