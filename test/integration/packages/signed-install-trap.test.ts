/**
 * Signed packages at every command that installs (issue #39), as a user runs
 * them (the built CLI): with the trusted key pinned, each tampered package of
 * the catalogue (test/support/signed-packages.ts) is refused by `package
 * verify`, `init`, `join`, `upgrade plan|apply|node` and `fleet
 * up|join|upgrade` with its own code and exit 3, before anything reaches a
 * host: every host, control plane and API server of the run is a TCP
 * listener that counts connections, and it sees none. The genuine package
 * with the same flags does reach the trap (so the trap would see a leak), and
 * without a pinned key every command says loudly that the origin is not
 * checked.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli } from '../../support/cli.js';
import {
  buildSignedPackage,
  TAMPERED_PACKAGES,
  writeSigningKeys,
  type SigningKeys,
} from '../../support/signed-packages.js';

const TOKEN = 'abcdef.0123456789abcdef';
const PIN = `sha256:${'a'.repeat(64)}`;
const LOOP_TIMEOUT_MS = 300_000;

let dir: string;
let keys: SigningKeys;
let genuine: string;
const tampered = new Map<string, string>();
let server: Server;
let port = 0;
let connections = 0;

beforeAll(async () => {
  ensureCliBuilt('commands/package/sign.js', ['src']);
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-signed-trap-'));
  keys = await writeSigningKeys(dir);
  genuine = (await buildSignedPackage(dir, { name: 'genuine', key: keys.trusted.key })).file;
  for (const [index, bad] of TAMPERED_PACKAGES.entries()) {
    tampered.set(bad.name, await bad.make(mkdtempSync(join(dir, `tampered-${index}-`)), keys));
  }
  server = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
}, LOOP_TIMEOUT_MS);

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** An inventory whose every host is the trap. */
function inventory(pkg: string, trustedKeys?: string): string {
  const file = join(dir, `inventory-${connections}-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(
    file,
    [
      'kind: FleetInventory',
      `package: ${pkg}`,
      ...(trustedKeys === undefined ? [] : [`trustedKeys: [${trustedKeys}]`]),
      'ssh:',
      '  user: root',
      `  port: ${port}`,
      'controlPlane:',
      '  hosts:',
      '    cp: { address: 127.0.0.1 }',
      'nodeGroups:',
      '  stores:',
      '    hosts:',
      '      store-1: { address: 127.0.0.1 }',
      '',
    ].join('\n'),
  );
  return file;
}

const trapHost = (): string[] => ['--host', `root@127.0.0.1:${port}`, '--ssh-timeout', '2'];

/** Each installing command, with `pkg` as its package and the trap as every host it would reach. */
const COMMANDS: Array<{ name: string; argv: (pkg: string) => string[] }> = [
  { name: 'package verify', argv: (pkg) => ['package', 'verify', pkg] },
  { name: 'init', argv: (pkg) => ['init', ...trapHost(), '--install-pkg-path', pkg] },
  {
    name: 'join',
    argv: (pkg) => [
      'join',
      `127.0.0.1:${port}`,
      ...trapHost(),
      '--token',
      TOKEN,
      '--discovery-token-ca-cert-hash',
      PIN,
      '--install-pkg-path',
      pkg,
    ],
  },
  { name: 'upgrade plan', argv: (pkg) => ['upgrade', 'plan', ...trapHost(), '--install-pkg-path', pkg] },
  { name: 'upgrade apply', argv: (pkg) => ['upgrade', 'apply', ...trapHost(), '--install-pkg-path', pkg] },
  {
    name: 'upgrade node',
    argv: (pkg) => [
      'upgrade',
      'node',
      ...trapHost(),
      '--control-plane',
      `root@127.0.0.1:${port}`,
      '--install-pkg-path',
      pkg,
    ],
  },
  { name: 'fleet up', argv: (pkg) => ['fleet', 'up', '-i', inventory(pkg), '--ssh-timeout', '2'] },
  {
    name: 'fleet join',
    argv: (pkg) => [
      'fleet',
      'join',
      '-i',
      inventory(pkg),
      '--ssh-timeout',
      '2',
      '--endpoint',
      `127.0.0.1:${port}`,
      '--token',
      TOKEN,
      '--discovery-token-ca-cert-hash',
      PIN,
    ],
  },
  {
    name: 'fleet upgrade',
    argv: (pkg) => ['fleet', 'upgrade', '-i', inventory(pkg), '--ssh-timeout', '2', '--install-pkg-path', pkg],
  },
];

async function run(argv: string[]): Promise<{ exitCode: number; code?: string; stderr: string; connections: number }> {
  const before = connections;
  const { exitCode, stdout, stderr } = await runCli([...argv, '--json'], { env: { EDGEADM_HOME: join(dir, 'home') } });
  let code: string | undefined;
  try {
    code = (JSON.parse(stdout) as { error?: { code?: string } }).error?.code;
  } catch {
    code = undefined;
  }
  return { exitCode, ...(code === undefined ? {} : { code }), stderr, connections: connections - before };
}

describe('with the trusted key pinned, every installing command refuses a tampered package before any connection', () => {
  // Every command against every kind of tampering would be 54 CLI runs; init and fleet up (the two ways in)
  // take the whole catalogue, and the other commands one kind each, in turn.
  const cases = COMMANDS.flatMap((command, index) => {
    const kinds =
      command.name === 'init' || command.name === 'fleet up'
        ? TAMPERED_PACKAGES
        : [TAMPERED_PACKAGES[index % TAMPERED_PACKAGES.length]!];
    return kinds.map((kind) => [`${command.name}: ${kind.name}`, command, kind] as const);
  });

  it.each(cases)(
    '%s',
    async (_name, command, kind) => {
      const result = await run([
        ...command.argv(tampered.get(kind.name)!),
        '--trusted-key',
        keys.trusted.publicKeyFile,
      ]);
      expect(result).toMatchObject({ exitCode: 3, code: kind.code, connections: 0 });
    },
    LOOP_TIMEOUT_MS,
  );

  it(
    'the same refusal comes from trustedKeys in the config file of init, and in a fleet inventory',
    async () => {
      const config = join(dir, 'init.yaml');
      writeFileSync(
        config,
        `apiVersion: edgeadm.io/v1alpha1\nkind: InitConfiguration\ntrustedKeys: [${keys.trusted.publicKeyFile}]\n`,
      );
      const bad = tampered.get(TAMPERED_PACKAGES[0]!.name)!;
      const result = await run(['init', ...trapHost(), '--install-pkg-path', bad, '--config', config]);
      expect(result).toMatchObject({ exitCode: 3, code: 'E_PACKAGE_SIGNATURE', connections: 0 });
      // A fleet inventory pins its environment's keys the same way.
      const fleet = await run(['fleet', 'up', '-i', inventory(bad, keys.trusted.publicKeyFile), '--ssh-timeout', '2']);
      expect(fleet).toMatchObject({ exitCode: 3, code: 'E_PACKAGE_SIGNATURE', connections: 0 });
    },
    LOOP_TIMEOUT_MS,
  );
});

describe('the trap is real', () => {
  it(
    'the genuine signed package with the same flags passes the check and reaches the trap host',
    async () => {
      for (const name of ['init', 'upgrade apply', 'fleet up']) {
        const command = COMMANDS.find((c) => c.name === name)!;
        const result = await run([...command.argv(genuine), '--trusted-key', keys.trusted.publicKeyFile]);
        expect(result.code, name).not.toMatch(/^E_PACKAGE/);
        expect(result.connections, name).toBeGreaterThan(0);
        expect(result.stderr, name).not.toContain('is NOT checked');
      }
    },
    LOOP_TIMEOUT_MS,
  );
});

describe('without a pinned key', () => {
  it(
    'each command goes on as before, and says on stderr that the origin of the package is not checked',
    async () => {
      const unsigned = tampered.get('the genuine package with its signature stripped')!;
      for (const name of ['package verify', 'init', 'upgrade plan', 'fleet upgrade']) {
        const command = COMMANDS.find((c) => c.name === name)!;
        const result = await run(command.argv(unsigned));
        expect(result.stderr, name).toContain('warning: the origin of package');
        expect(result.stderr, name).toContain('is NOT checked');
        if (name !== 'package verify') expect(result.connections, name).toBeGreaterThan(0);
        else expect(result.exitCode).toBe(0);
      }
    },
    LOOP_TIMEOUT_MS,
  );
});
