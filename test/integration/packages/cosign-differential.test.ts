/**
 * The package signature against the real cosign (issue #39), built from its
 * Go module by test/real/build.sh: cosign's `verify-blob --key` accepts the
 * signature edgeadm writes into a package (over manifest.json, with the
 * public key `package keygen` wrote), and edgeadm accepts signatures that
 * `cosign sign-blob --key` makes, with cosign's own key pair and with an
 * edgeadm key imported into cosign. Both refuse a manifest changed after
 * signing, so agreeing is not agreeing to accept everything.
 *
 * Offline, as at a site: no transparency log (`--tlog-upload=false`,
 * `--insecure-ignore-tlog`), and SIGSTORE_REKOR_PUBLIC_KEY set, which is
 * what makes cosign v2 skip fetching the public-good trust root over the
 * network (cmd/cosign/cli/verify/verify_blob.go); the file is never read,
 * since the log is ignored.
 *
 * Skipped, saying why, when cosign is not built (`test/real/build.sh cosign`).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli } from '../../support/cli.js';
import { writeSourceDir } from '../../support/package-fixtures.js';
import { builtCosign } from '../../support/real/rig.js';

const cosign = builtCosign();
const skipReason = 'reason' in cosign ? cosign.reason : undefined;
if (skipReason !== undefined) console.warn(`cosign differential skipped: ${skipReason}`);

let dir: string;

/** Runs the built cosign, offline, with its home in the test directory. */
function runCosign(args: string[]): { status: number; output: string } {
  const result = spawnSync((cosign as { binary: string }).binary, args, {
    cwd: dir,
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: dir,
      COSIGN_PASSWORD: 'differential-test',
      SIGSTORE_REKOR_PUBLIC_KEY: join(dir, 'no-rekor-key.pem'),
    },
    timeout: 60_000,
  });
  return { status: result.status ?? 1, output: `${result.stdout}${result.stderr}` };
}

async function edgeadm(args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  return runCli(args, { cwd: dir, env: { EDGEADM_HOME: join(dir, '.edgeadm') } });
}

/** Builds a package in `dir`; with --sign-key when a key is given. */
async function build(name: string, version: string, signKey?: string): Promise<string> {
  const file = `${name}.tar.gz`;
  const result = await edgeadm([
    'package',
    'build',
    '--from',
    './pkg',
    '--distribution',
    'k3s',
    '--kubernetes-version',
    version,
    '--arch',
    'amd64',
    '-o',
    file,
    ...(signKey === undefined ? [] : ['--sign-key', signKey]),
  ]);
  expect(result.exitCode, result.stderr).toBe(0);
  return file;
}

/** Takes manifest.json (and the signature, if any) out of a package into its own directory, as an operator would with tar. */
function unpackHead(pkg: string, withSignature: boolean): string {
  const out = mkdtempSync(join(dir, 'head-'));
  execFileSync('tar', [
    '-xzf',
    join(dir, pkg),
    '-C',
    out,
    'manifest.json',
    ...(withSignature ? ['manifest.json.sig'] : []),
  ]);
  return out;
}

beforeAll(async () => {
  if (skipReason !== undefined) return;
  ensureCliBuilt('commands/package/sign.js', ['src']);
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-cosign-'));
  await writeSourceDir(join(dir, 'pkg'));
  expect(runCosign(['version']).output).toContain((cosign as { version: string }).version);
});

afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(skipReason !== undefined)(
  `the real cosign (${'version' in cosign ? cosign.version : 'not built'})`,
  () => {
    it('verify-blob --key accepts the signature edgeadm put in the package, and refuses it over a changed manifest', async () => {
      expect((await edgeadm(['package', 'keygen', '--output-key-prefix', 'edgeadm'])).exitCode).toBe(0);
      const pkg = await build('signed', 'v1.30.4', 'edgeadm.key');
      const head = unpackHead(pkg, true);
      const verifyArgs = (manifest: string) => [
        'verify-blob',
        '--key',
        join(dir, 'edgeadm.pub'),
        '--signature',
        join(head, 'manifest.json.sig'),
        '--insecure-ignore-tlog',
        manifest,
      ];
      const good = runCosign(verifyArgs(join(head, 'manifest.json')));
      expect(good.output).toContain('Verified OK');
      expect(good.status).toBe(0);

      const changed = join(head, 'changed.json');
      writeFileSync(changed, readFileSync(join(head, 'manifest.json'), 'utf8').replace('v1.30.4', 'v1.30.5'));
      const bad = runCosign(verifyArgs(changed));
      expect(bad.status).not.toBe(0);
      expect(bad.output).not.toContain('Verified OK');
    });

    it("edgeadm accepts what cosign sign-blob signs with cosign's own key pair, and only with that key pinned", async () => {
      expect(runCosign(['generate-key-pair', '--output-key-prefix', 'cosign']).status).toBe(0);
      const pkg = await build('cosign-signed', 'v1.30.4');
      const head = unpackHead(pkg, false);
      const sign = runCosign([
        'sign-blob',
        '--key',
        join(dir, 'cosign.key'),
        '--tlog-upload=false',
        '--output-signature',
        join(head, 'manifest.json.sig'),
        '--yes',
        join(head, 'manifest.json'),
      ]);
      expect(sign.status, sign.output).toBe(0);
      const attached = await edgeadm([
        'package',
        'sign',
        pkg,
        '--signature',
        join(head, 'manifest.json.sig'),
        '--trusted-key',
        'cosign.pub',
      ]);
      expect(attached.exitCode, attached.stderr).toBe(0);
      expect((await edgeadm(['package', 'verify', pkg, '--trusted-key', 'cosign.pub'])).exitCode).toBe(0);
      const otherKey = await edgeadm(['package', 'verify', pkg, '--trusted-key', 'edgeadm.pub', '--json']);
      expect(otherKey.exitCode).toBe(3);
      expect(otherKey.stdout).toContain('E_PACKAGE_SIGNATURE');
    });

    it('edgeadm accepts what cosign signs with an edgeadm key imported by cosign import-key-pair', async () => {
      const imported = runCosign([
        'import-key-pair',
        '--key',
        join(dir, 'edgeadm.key'),
        '--output-key-prefix',
        'imported',
      ]);
      expect(imported.status, imported.output).toBe(0);
      // The same key: cosign's public half is the very file edgeadm wrote.
      expect(readFileSync(join(dir, 'imported.pub'), 'utf8')).toBe(readFileSync(join(dir, 'edgeadm.pub'), 'utf8'));
      const pkg = await build('imported-signed', 'v1.31.1');
      const head = unpackHead(pkg, false);
      const sign = runCosign([
        'sign-blob',
        '--key',
        join(dir, 'imported.key'),
        '--tlog-upload=false',
        '--output-signature',
        join(head, 'manifest.json.sig'),
        '--yes',
        join(head, 'manifest.json'),
      ]);
      expect(sign.status, sign.output).toBe(0);
      expect((await edgeadm(['package', 'sign', pkg, '--signature', join(head, 'manifest.json.sig')])).exitCode).toBe(
        0,
      );
      expect((await edgeadm(['package', 'verify', pkg, '--trusted-key', 'edgeadm.pub'])).exitCode).toBe(0);

      // cosign's signature of this manifest moved onto another package: both tools refuse it.
      const other = await build('moved-onto', 'v1.30.4');
      const moved = await edgeadm(['package', 'sign', other, '--signature', join(head, 'manifest.json.sig')]);
      expect(moved.exitCode).toBe(0);
      const refused = await edgeadm(['package', 'verify', other, '--trusted-key', 'edgeadm.pub', '--json']);
      expect(refused.exitCode).toBe(3);
      expect(refused.stdout).toContain('E_PACKAGE_SIGNATURE');
      const otherHead = unpackHead(other, true);
      const cosignRefuses = runCosign([
        'verify-blob',
        '--key',
        join(dir, 'edgeadm.pub'),
        '--signature',
        join(otherHead, 'manifest.json.sig'),
        '--insecure-ignore-tlog',
        join(otherHead, 'manifest.json'),
      ]);
      expect(cosignRefuses.status).not.toBe(0);
    });
  },
);
