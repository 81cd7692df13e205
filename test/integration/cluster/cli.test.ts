/**
 * The cluster commands' surface without hosts: the phase tree in --help,
 * the generated `init phase` / `join phase` subcommands, `config print`, and
 * the errors that stop before anything is touched.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli } from '../../support/cli.js';
import { MALICIOUS_PACKAGES, buildFixturePackage, flipByteInPackage } from '../../support/package-fixtures.js';

beforeAll(() => {
  ensureCliBuilt('commands/init.js', ['src']);
});

describe('init and join help', () => {
  it('lists the init phase tree', async () => {
    const { exitCode, stdout } = await runCli(['init', '--help']);
    expect(exitCode).toBe(0);
    for (const phase of [
      'preflight',
      'package',
      'runtime',
      'control-plane',
      'wait-ready',
      'bootstrap-token',
      'record-package',
      'edge-addons',
      'edge-kube-proxy',
      'edge-autonomy',
      'edge-site-grids',
      'show-join-command',
    ]) {
      expect(stdout).toMatch(new RegExp(`^\\s+${phase}\\s+\\S`, 'm'));
    }
  });

  it('offers one subcommand per phase, generated from the tree', async () => {
    const { exitCode, stdout } = await runCli(['init', 'phase', 'bootstrap-token', '--help']);
    expect(exitCode).toBe(0);
    expect(stdout).toContain("Run init's bootstrap-token phase alone");
    const joinPhase = await runCli(['join', 'phase', 'node-join', '--help']);
    expect(joinPhase.stdout).toContain("Run join's node-join phase alone");
  });
});

describe('config print', () => {
  it('prints init and join defaults as YAML that init and join read back', async () => {
    const init = await runCli(['config', 'print', 'init-defaults']);
    expect(load(init.stdout)).toMatchObject({
      kind: 'InitConfiguration',
      distribution: 'k3s',
      podCidr: '10.42.0.0/16',
    });
    const joinDefaults = await runCli(['config', 'print', 'join-defaults']);
    expect(load(joinDefaults.stdout)).toMatchObject({ kind: 'JoinConfiguration', discoveryTimeout: '5m0s' });
  });
});

describe('errors before anything is touched', () => {
  it('--distribution kubeadm with a k3s package is refused before any host is reached', async () => {
    const pkg = await buildFixturePackage(mkdtempSync(join(tmpdir(), 'edgeadm-k3s-pkg-')));
    const { exitCode, stdout } = await runCli([
      'init',
      '--distribution',
      'kubeadm',
      '--install-pkg-path',
      pkg.file,
      '--host',
      'root@192.0.2.1',
      '--json',
    ]);
    expect(exitCode).toBe(3);
    expect(JSON.parse(stdout)).toMatchObject({ error: { code: 'E_PACKAGE_DISTRIBUTION' } });
  });

  it('an unknown distribution is refused', async () => {
    const { exitCode, stdout } = await runCli([
      'init',
      '--distribution',
      'microk8s',
      '--install-pkg-path',
      'x',
      '--json',
    ]);
    expect(exitCode).toBe(3);
    expect(JSON.parse(stdout)).toMatchObject({ error: { code: 'E_DISTRIBUTION_UNKNOWN' } });
  });

  it('init without a package says which flag is missing', async () => {
    const { exitCode, stdout } = await runCli(['init', '--json']);
    expect(exitCode).toBe(3);
    expect(JSON.parse(stdout)).toMatchObject({ error: { code: 'E_NO_PACKAGE' } });
  });

  it('a --config of the wrong kind is refused', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'edgeadm-cfg-')), 'join.yaml');
    writeFileSync(file, (await runCli(['config', 'print', 'join-defaults'])).stdout);
    const { exitCode, stdout } = await runCli(['init', '--config', file, '--json']);
    expect(exitCode).toBe(3);
    expect(JSON.parse(stdout)).toMatchObject({ error: { code: 'E_CONFIG_INVALID' } });
  });

  it('reset without --force or --dry-run asks for one', async () => {
    const { exitCode, stdout } = await runCli(['reset', '--json']);
    expect(exitCode).toBe(3);
    expect(JSON.parse(stdout)).toMatchObject({ error: { code: 'E_RESET_NOT_CONFIRMED' } });
  });

  it('join without a CA pin refuses to go on', async () => {
    const { exitCode, stdout } = await runCli([
      'join',
      '10.0.0.10:6443',
      '--token',
      'abcdef.0123456789abcdef',
      '--json',
    ]);
    expect(exitCode).toBe(3);
    // One code for a missing pin, whether join, join phase discovery or fleet join finds it.
    expect(JSON.parse(stdout)).toMatchObject({ error: { code: 'E_DISCOVERY_NO_PIN' } });
  });
});

describe('join refuses malformed trust input before any host is reached', () => {
  /** A TCP listener standing in for the SSH host: it counts the connections edgeadm opens. */
  async function withSshTrap(run: (hostFlags: string[]) => Promise<void>): Promise<number> {
    let connections = 0;
    const trap = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
    const { port } = trap.address() as AddressInfo;
    try {
      await run(['--host', `root@127.0.0.1:${port}`, '--ssh-timeout', '2']);
    } finally {
      await new Promise((resolve) => trap.close(resolve));
    }
    return connections;
  }

  it.each([
    [
      'a malformed token',
      ['--token', 'BADTOKEN', '--discovery-token-ca-cert-hash', `sha256:${'a'.repeat(64)}`],
      'E_TOKEN_INVALID',
    ],
    [
      'a malformed pin',
      ['--token', 'abcdef.0123456789abcdef', '--discovery-token-ca-cert-hash', 'sha256:abc'],
      'E_CA_PIN_INVALID',
    ],
  ])('%s fails at once, with a missing package too, and opens no SSH connection', async (_name, trust, code) => {
    const connections = await withSshTrap(async (hostFlags) => {
      const { exitCode, stdout } = await runCli([
        'join',
        '10.0.0.10:6443',
        ...trust,
        '--install-pkg-path',
        '/nonexistent/pkg.tar.gz',
        ...hostFlags,
        '--json',
      ]);
      expect(exitCode).toBe(3);
      expect(JSON.parse(stdout)).toMatchObject({ error: { code } });
    });
    expect(connections).toBe(0);
  });

  it('names exactly what is missing', async () => {
    const { exitCode, stderr } = await runCli(['join', '10.0.0.10:6443', '--install-pkg-path', 'x']);
    expect(exitCode).toBe(3);
    expect(stderr).toContain('join needs --token');
    expect(stderr).not.toContain('endpoint');
  });
});

describe('a bad install package stops init and join before any host is reached', () => {
  // The host address is TEST-NET-1 (RFC 5737), where nothing answers: had edgeadm
  // tried to connect, the error would be E_SSH_UNREACHABLE, not the package's.
  const host = ['--host', 'root@192.0.2.1', '--ssh-timeout', '2'];
  const cases = MALICIOUS_PACKAGES.filter((p) => ['an entry ../x', 'a symlink to /etc'].includes(p.name));

  it('has the cases it means to run', () => {
    expect(cases.map((c) => c.name)).toEqual(['an entry ../x', 'a symlink to /etc']);
  });

  for (const bad of cases) {
    it(`init refuses ${bad.name}, naming the entry`, async () => {
      const file = await bad.make(mkdtempSync(join(tmpdir(), 'edgeadm-badpkg-')));
      const { exitCode, stdout } = await runCli(['init', ...host, '--install-pkg-path', file, '--json']);
      expect(exitCode).toBe(3);
      expect(JSON.parse(stdout)).toMatchObject({ error: { code: bad.code, details: { entry: bad.entry } } });
    });
  }

  it('join refuses a package with a flipped byte, naming the entry', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'edgeadm-badpkg-'));
    const good = await buildFixturePackage(dir);
    const flipped = await flipByteInPackage(good.file, join(dir, 'flipped.tar.gz'));
    const { exitCode, stdout } = await runCli([
      'join',
      '192.0.2.1:6443',
      ...host,
      '--token',
      'abcdef.0123456789abcdef',
      '--discovery-token-ca-cert-hash',
      `sha256:${'0'.repeat(64)}`,
      '--install-pkg-path',
      flipped,
      '--json',
    ]);
    expect(exitCode).toBe(3);
    const doc = JSON.parse(stdout) as { error: { code: string; details?: { entry?: string } } };
    expect(doc.error.code).toMatch(/^E_PACKAGE_/);
    expect(doc.error.details?.entry).toBeTruthy();
  });
});
