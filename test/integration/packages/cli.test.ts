/**
 * `edgeadm package build | verify | inspect` as a user runs them (a
 * subprocess of the built CLI): good packages exit 0 with the promised
 * output; every malicious package in the fixture catalogue exits 3 with the
 * entry named on stderr and in the `--json` error document, and nothing is
 * written next to it.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, runCli } from '../../support/cli.js';
import { listTree, MALICIOUS_PACKAGES, writeSourceDir } from '../../support/package-fixtures.js';

let work: string;
let source: string;
let good: string;

const BUILD_FLAGS = ['--distribution', 'k3s', '--kubernetes-version', 'v1.30.4', '--arch', 'amd64'];
const SOURCE_DATE_EPOCH = '1714564800';

beforeAll(async () => {
  if (!process.env.EDGEADM_BIN && !existsSync(join(REPO_ROOT, 'lib/commands/package/verify.js'))) {
    throw new Error('the CLI is not built: run "npm run build" (npm test does) before these tests');
  }
  work = await mkdtemp(join(tmpdir(), 'edgeadm-package-cli-'));
  source = await writeSourceDir(join(work, 'source'));
  good = join(work, 'good.tar.gz');
  const built = await runCli(['package', 'build', '--from', source, ...BUILD_FLAGS, '-o', good], {
    env: { SOURCE_DATE_EPOCH },
  });
  expect(built.stderr).toBe('');
  expect(built.exitCode).toBe(0);
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('edgeadm package build', () => {
  it('builds a package and says what it built', async () => {
    const output = join(work, 'again.tar.gz');
    const { exitCode, stdout } = await runCli(['package', 'build', '--from', source, ...BUILD_FLAGS, '-o', output], {
      env: { SOURCE_DATE_EPOCH },
    });
    expect(exitCode).toBe(0);
    expect(stdout).toMatch(
      /^package edge-k3s-v1\.30\.4-amd64 built: .*again\.tar\.gz \(5 files, 0\.5 MiB; archive .* sha256 [0-9a-f]{64}\)$/m,
    );
    // Same directory, same SOURCE_DATE_EPOCH: the same bytes.
    expect((await readFile(output)).equals(await readFile(good))).toBe(true);
  });

  it('prints the package summary as JSON with --json', async () => {
    const output = join(work, 'json.tar.gz');
    const { exitCode, stdout } = await runCli([
      'package',
      'build',
      '--from',
      source,
      ...BUILD_FLAGS,
      '-o',
      output,
      '--json',
    ]);
    expect(exitCode).toBe(0);
    const doc = JSON.parse(stdout) as { name: string; fileCount: number; archiveSha256: string };
    expect(doc).toMatchObject({ name: 'edge-k3s-v1.30.4-amd64', fileCount: 5 });
    expect(doc.archiveSha256).toBe(
      createHash('sha256')
        .update(await readFile(output))
        .digest('hex'),
    );
  });

  it('refuses a source with a symlink, naming it, exit 3, writing no package', async () => {
    const linked = await writeSourceDir(join(work, 'linked-source'));
    await symlink('/etc', join(linked, 'etc'));
    const output = join(work, 'linked.tar.gz');
    const { exitCode, stderr } = await runCli(['package', 'build', '--from', linked, ...BUILD_FLAGS, '-o', output]);
    expect(exitCode).toBe(3);
    expect(stderr).toContain('"etc" is a symbolic link');
    expect(stderr).toContain('code: E_PACKAGE_LINK');
    expect(existsSync(output)).toBe(false);
  });

  it('refuses an unknown distribution as a usage error (exit 3)', async () => {
    const { exitCode, stderr } = await runCli([
      'package',
      'build',
      '--from',
      source,
      '--distribution',
      'rke2',
      '--kubernetes-version',
      'v1.30.4',
      '--arch',
      'amd64',
      '-o',
      join(work, 'rke2.tar.gz'),
    ]);
    expect(exitCode).toBe(3);
    expect(stderr).toContain('rke2');
  });
});

describe('edgeadm package verify and inspect on a good package', () => {
  it('verify prints the verdict with the file count and size', async () => {
    const { exitCode, stdout } = await runCli(['package', 'verify', good]);
    expect(exitCode).toBe(0);
    expect(stdout).toMatch(
      /^package edge-k3s-v1\.30\.4-amd64 verified: 5 files, 0\.5 MiB \(.*good\.tar\.gz, sha256 [0-9a-f]{64}\)$/m,
    );
  });

  it('verify --json prints one document with the checksum of the file', async () => {
    const { exitCode, stdout } = await runCli(['package', 'verify', good, '--json']);
    expect(exitCode).toBe(0);
    const doc = JSON.parse(stdout) as Record<string, unknown>;
    expect(doc).toMatchObject({ verified: true, name: 'edge-k3s-v1.30.4-amd64', fileCount: 5, distribution: 'k3s' });
    expect(doc.archiveSha256).toBe(
      createHash('sha256')
        .update(await readFile(good))
        .digest('hex'),
    );
  });

  it('inspect prints the summary and a file table', async () => {
    const { exitCode, stdout } = await runCli(['package', 'inspect', good]);
    expect(exitCode).toBe(0);
    expect(stdout).toContain('Package:       edge-k3s-v1.30.4-amd64');
    expect(stdout).toContain('Created:       2024-05-01T12:00:00.000Z');
    expect(stdout).toMatch(/^0755 +\d+ {2}[0-9a-f]{12} {2}bin\/k3s$/m);
  });

  it('inspect --json lists every file with its checksum, size and mode', async () => {
    const { exitCode, stdout } = await runCli(['package', 'inspect', good, '--json']);
    expect(exitCode).toBe(0);
    const doc = JSON.parse(stdout) as { files: Array<{ path: string; sha256: string; size: number; mode: string }> };
    expect(doc.files.map((file) => file.path)).toEqual([
      'assets/k3s.service',
      'bin/k3s',
      'cni/bridge',
      'images/k3s-airgap-images-amd64.tar.zst',
      'sbom.cdx.json',
    ]);
    const k3s = await readFile(join(source, 'bin/k3s'));
    expect(doc.files[1]).toEqual({
      path: 'bin/k3s',
      sha256: createHash('sha256').update(k3s).digest('hex'),
      size: k3s.length,
      mode: '0755',
    });
  });

  it('a missing package file is exit 3, E_PACKAGE_NOT_FOUND', async () => {
    const { exitCode, stderr } = await runCli(['package', 'verify', join(work, 'nope.tar.gz')]);
    expect(exitCode).toBe(3);
    expect(stderr).toContain('code: E_PACKAGE_NOT_FOUND');
  });
});

describe('edgeadm package verify and inspect refuse bad packages', () => {
  // Each case runs the CLI as a subprocess; they are independent, so they run side by side.
  it.concurrent.for(MALICIOUS_PACKAGES.map((bad, index) => [bad.name, bad, index] as const))(
    '%s',
    async ([, bad, index], { expect }) => {
      const dir = join(work, `bad-${index}`);
      await mkdir(dir);
      const file = await bad.make(dir);
      const before = await listTree(dir);

      const human = await runCli(['package', 'verify', file]);
      expect(human.exitCode).toBe(3);
      expect(human.stdout).toBe('');
      expect(human.stderr).toContain(`code: ${bad.code}`);
      if (bad.entry !== undefined) expect(human.stderr).toContain(bad.entry);

      const json = await runCli(['package', 'verify', file, '--json']);
      expect(json.exitCode).toBe(3);
      const doc = JSON.parse(json.stdout) as {
        error: { code: string; exitCode: number; details?: Record<string, unknown> };
      };
      expect(doc.error.code).toBe(bad.code);
      expect(doc.error.exitCode).toBe(3);
      expect(doc.error.details?.entry).toBe(bad.entry);
      expect(doc.error.details?.file).toBe(file);

      expect(await listTree(dir)).toEqual(before);
    },
  );

  it.concurrent.for([
    'an entry ../x',
    'a symlink to /etc',
    'a file whose content does not match its manifest checksum',
  ])('inspect verifies first and refuses %s', async (name, { expect }) => {
    const bad = MALICIOUS_PACKAGES.find((candidate) => candidate.name === name)!;
    const dir = join(work, `inspect-${MALICIOUS_PACKAGES.indexOf(bad)}`);
    await mkdir(dir);
    const file = await bad.make(dir);
    const { exitCode, stdout } = await runCli(['package', 'inspect', file, '--json']);
    expect(exitCode).toBe(3);
    const doc = JSON.parse(stdout) as { error: { code: string; details?: Record<string, unknown> } };
    expect(doc.error.code).toBe(bad.code);
    expect(doc.error.details?.entry).toBe(bad.entry);
  });
});
