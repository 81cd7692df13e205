/**
 * `edgeadm package keygen | build --sign-key | sign | verify | inspect` as
 * an operator runs them: every example their --help prints, run as printed
 * (through bash, in a directory holding what the examples name), in the
 * order of the package guide's walk-through; then what each prints, the
 * modes of the key files, and the refusals a person meets first.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signManifest } from '../../../src/packages/signature.js';
import { readPrivateSigningKey } from '../../../src/packages/signing-keys.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { REPO_ROOT, runCli } from '../../support/cli.js';
import { writeSourceDir } from '../../support/package-fixtures.js';

const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'oclif.manifest.json'), 'utf8')) as {
  commands: Record<string, { examples?: string[] }>;
};
const examples = (id: string): string[] => manifest.commands[id]?.examples ?? [];

let dir: string;

/** Runs one example exactly as --help prints it, with `edgeadm` being the built CLI. */
function runExample(example: string): { exitCode: number; stdout: string; stderr: string } {
  const cli = process.env.EDGEADM_BIN ?? `${process.execPath} ${join(REPO_ROOT, 'bin/run.js')}`;
  const command = example.replace('<%= config.bin %>', cli);
  try {
    const stdout = execFileSync('bash', ['-c', command], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, EDGEADM_HOME: join(dir, '.edgeadm'), NO_COLOR: '1' },
    });
    return { exitCode: 0, stdout, stderr: '' };
  } catch (error) {
    const failed = error as { status: number; stdout: string; stderr: string };
    return { exitCode: failed.status, stdout: failed.stdout, stderr: failed.stderr };
  }
}

beforeAll(async () => {
  ensureCliBuilt('commands/package/keygen.js', ['src']);
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-signing-cli-'));
  await writeSourceDir(join(dir, 'pkg'));
  mkdirSync(join(dir, '.edgeadm'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('the examples of --help, run as printed, in the order of the walk-through', () => {
  it('keygen writes the pair with the private key 0600, and says where', () => {
    const [plain, json] = examples('package:keygen');
    const first = runExample(plain!);
    expect(first.exitCode).toBe(0);
    expect(first.stdout).toMatch(/^private key: edgeadm-signing\.key \(mode 0600/m);
    expect(first.stdout).toMatch(/^fingerprint: sha256:[0-9a-f]{64}$/m);
    expect(statSync(join(dir, 'edgeadm-signing.key')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'edgeadm-signing.pub')).mode & 0o777).toBe(0o644);
    const doc = JSON.parse(runExample(json!).stdout) as Record<string, string>;
    expect(doc).toMatchObject({
      privateKeyFile: 'site-a-2025.key',
      publicKeyFile: 'site-a-2025.pub',
      algorithm: 'ecdsa-p256-sha256',
    });
    // The key itself is never printed.
    expect(JSON.stringify(doc)).not.toContain(readFileSync(join(dir, 'site-a-2025.key'), 'utf8').split('\n')[1]);
  });

  it('build --sign-key signs the package it builds', () => {
    const signedBuild = examples('package:build').find((example) => example.includes('--sign-key'))!;
    const result = runExample(signedBuild);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^signed by sha256:[0-9a-f]{64}$/m);
    expect(
      runExample('<%= config.bin %> package verify edge-k3s.tar.gz --trusted-key edgeadm-signing.pub').exitCode,
    ).toBe(0);
  });

  it('sign, verify and inspect --sbom on a package built unsigned', async () => {
    const build = await runCli(
      [
        'package',
        'build',
        '--from',
        './pkg',
        '--distribution',
        'k3s',
        '--kubernetes-version',
        'v1.30.4',
        '--arch',
        'amd64',
        '-o',
        'pkg.tar.gz',
      ],
      { cwd: dir },
    );
    expect(build.exitCode).toBe(0);
    const [signKey, signJson, signAttach] = examples('package:sign');
    const [verifyPinned, verifyTwo, verifyUnpinned] = examples('package:verify');

    expect(runExample(verifyPinned!)).toMatchObject({
      exitCode: 3,
      stderr: expect.stringContaining('E_PACKAGE_UNSIGNED'),
    });
    expect(runExample(signKey!)).toMatchObject({
      exitCode: 0,
      stdout: expect.stringMatching(/^package edge-k3s-v1\.30\.4-amd64 signed by sha256:/m),
    });
    expect(runExample(verifyPinned!)).toMatchObject({
      exitCode: 0,
      stdout: expect.stringContaining('; signed by sha256:'),
    });

    // A rotation: the old and the new key pinned together.
    copyFileSync(join(dir, 'site-a-2025.pub'), join(dir, 'old.pub'));
    copyFileSync(join(dir, 'edgeadm-signing.pub'), join(dir, 'new.pub'));
    const two = JSON.parse(runExample(verifyTwo!).stdout) as { signature: Record<string, unknown> };
    expect(two.signature).toMatchObject({ isSigned: true, isOriginChecked: true, trustedKeyFile: 'new.pub' });

    const unpinned = runExample(`${verifyUnpinned!} 2>&1`);
    expect(unpinned.exitCode).toBe(0);
    expect(unpinned.stdout).toContain('warning: the origin of package edge-k3s-v1.30.4-amd64 is NOT checked');

    const [inspectPlain, inspectJson, inspectSbom] = examples('package:inspect');
    expect(runExample(inspectPlain!).stdout).toContain('Signature:     present, NOT checked (no --trusted-key pinned)');
    expect(JSON.parse(runExample(inspectJson!).stdout)).toMatchObject({
      sbom: 'sbom.cdx.json',
      signature: { isSigned: true },
    });
    expect(runExample(inspectSbom!).exitCode).toBe(0);
    const sbom = JSON.parse(readFileSync(join(dir, 'sbom.cdx.json'), 'utf8')) as {
      bomFormat: string;
      specVersion: string;
    };
    expect(sbom).toMatchObject({ bomFormat: 'CycloneDX', specVersion: '1.6' });

    const signed = JSON.parse(runExample(signJson!).stdout) as Record<string, unknown>;
    expect(signed).toMatchObject({
      file: 'pkg-signed.tar.gz',
      replacedSignature: true,
      name: 'edge-k3s-v1.30.4-amd64',
    });

    // A signature made elsewhere (cosign sign-blob writes the same format) over the manifest taken out with tar.
    await runCli(['package', 'keygen', '--output-key-prefix', 'cosign'], { cwd: dir });
    execFileSync('tar', ['-xzf', 'pkg.tar.gz', 'manifest.json'], { cwd: dir });
    writeFileSync(
      join(dir, 'manifest.json.sig'),
      signManifest(readFileSync(join(dir, 'manifest.json')), readPrivateSigningKey(join(dir, 'cosign.key'))),
    );
    expect(runExample(signAttach!)).toMatchObject({
      exitCode: 0,
      stdout: expect.stringContaining('the old signature was replaced'),
    });
    expect(runExample('<%= config.bin %> package verify pkg.tar.gz --trusted-key cosign.pub').exitCode).toBe(0);
  });
});

describe('refusals', () => {
  it('keygen does not overwrite a key, exit 3, naming the file and --force', () => {
    const again = runExample('<%= config.bin %> package keygen');
    expect(again.exitCode).toBe(3);
    expect(again.stderr).toContain('edgeadm-signing.key already exists');
    expect(again.stderr).toContain('--force');
  });

  it('sign without --key or --signature says which to give', () => {
    const none = runExample('<%= config.bin %> package sign pkg.tar.gz');
    expect(none.exitCode).toBe(3);
    expect(none.stderr).toContain('give --key (sign here) or --signature');
  });

  it('a private key given as --trusted-key is refused, naming the file', () => {
    const wrong = runExample('<%= config.bin %> package verify pkg.tar.gz --trusted-key edgeadm-signing.key');
    expect(wrong.exitCode).toBe(3);
    expect(wrong.stderr).toContain('edgeadm-signing.key holds a private key');
    expect(wrong.stderr).toContain('code: E_PACKAGE_KEY');
  });
});
