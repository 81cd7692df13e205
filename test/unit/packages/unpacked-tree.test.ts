/**
 * The host-side check of an unpacked package, run for real: GNU tar unpacks
 * a built package, the listing command runs in a shell on this machine, and
 * the comparison must find the tree exact, then find every kind of change.
 */
import { chmod, mkdir, mkdtemp, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isPackageError } from '../../../src/packages/errors.js';
import { verifyPackage, type VerifiedPackage } from '../../../src/packages/verify.js';
import {
  compareUnpackedTree,
  throwOnTreeProblems,
  unpackedTreeListingCommand,
} from '../../../src/packages/unpacked-tree.js';
import { buildFixturePackage } from '../../support/package-fixtures.js';

let work: string;
let verified: VerifiedPackage;
let tree: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'edgeadm-unpacked-'));
  const built = await buildFixturePackage(work);
  verified = await verifyPackage(built.file);
});

beforeEach(async () => {
  tree = join(work, `tree-${Math.random().toString(36).slice(2)}`);
  await mkdir(tree, { mode: 0o700 });
  await execa('tar', ['-xzf', verified.file, '-C', tree, '--no-same-owner']);
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

async function problemsOf(dir: string, options = {}) {
  const { stdout } = await execa('sh', ['-c', unpackedTreeListingCommand()], { cwd: dir, stripFinalNewline: false });
  return compareUnpackedTree(stdout, verified.manifest, verified.manifestSha256, options);
}

describe('compareUnpackedTree on a tree GNU tar unpacked', () => {
  it('finds the tree of a verified package exact', async () => {
    expect(await problemsOf(tree)).toEqual([]);
  });

  it('finds a changed byte, expected against found', async () => {
    await writeFile(join(tree, 'bin', 'k3s'), 'other bytes');
    const problems = await problemsOf(tree);
    expect(problems).toHaveLength(1);
    expect(problems[0]?.path).toBe('bin/k3s');
    expect(problems[0]?.expected).toContain(verified.manifest.files.find((f) => f.path === 'bin/k3s')?.sha256);
    expect(problems[0]?.found).toMatch(/^SHA-256 [0-9a-f]{64}$/);
  });

  it('finds a changed mode, and a setuid bit', async () => {
    await chmod(join(tree, 'cni', 'bridge'), 0o775);
    await chmod(join(tree, 'bin', 'k3s'), 0o4755);
    const problems = await problemsOf(tree);
    expect(problems.map((p) => [p.path, p.found])).toEqual([
      ['bin/k3s', 'mode 4755'],
      ['cni/bridge', 'mode 0775'],
    ]);
  });

  it('finds a file the manifest does not list, an extra directory, and a name with a newline', async () => {
    await writeFile(join(tree, 'bin', 'extra'), 'x');
    await mkdir(join(tree, 'empty'));
    await writeFile(join(tree, 'bin', 'k3s\nf 755 k3s'), 'x');
    const paths = (await problemsOf(tree)).map((p) => p.path);
    expect(paths).toContain('bin/extra');
    expect(paths).toContain('empty');
    expect(paths).toContain('bin/k3s\nf 755 k3s');
  });

  it('finds a missing file and a file replaced by a link', async () => {
    await unlink(join(tree, 'assets', 'k3s.service'));
    await unlink(join(tree, 'bin', 'k3s'));
    await symlink('/bin/sh', join(tree, 'bin', 'k3s'));
    const problems = await problemsOf(tree);
    expect(problems).toContainEqual({ path: 'assets/k3s.service', expected: 'a regular file', found: 'nothing' });
    expect(problems).toContainEqual({ path: 'bin/k3s', expected: 'a regular file', found: 'a symbolic link' });
  });

  it('finds a changed manifest.json', async () => {
    await writeFile(join(tree, 'manifest.json'), '{}');
    expect((await problemsOf(tree)).map((p) => p.path)).toEqual(['manifest.json']);
  });

  it('allows the unpack marker only when told', async () => {
    await writeFile(join(tree, '.edgeadm-archive-sha256'), 'x\n');
    expect((await problemsOf(tree)).map((p) => p.path)).toEqual(['.edgeadm-archive-sha256']);
    expect(await problemsOf(tree, { extraFile: '.edgeadm-archive-sha256' })).toEqual([]);
  });

  it('refuses a listing cut short', () => {
    expect(compareUnpackedTree('f 644 manifest.json\u0000', verified.manifest, verified.manifestSha256)).toHaveLength(
      1,
    );
  });

  it('throws E_PACKAGE_HOST_MISMATCH naming the file, expected and found', async () => {
    await writeFile(join(tree, 'bin', 'k3s'), 'other bytes');
    const problems = await problemsOf(tree);
    let error: unknown;
    try {
      throwOnTreeProblems(problems, { packageName: 'pkg', host: 'edge-1', dir: tree });
    } catch (caught) {
      error = caught;
    }
    expect(isPackageError(error, 'E_PACKAGE_HOST_MISMATCH')).toBe(true);
    expect((error as Error).message).toMatch(/"bin\/k3s": expected SHA-256 [0-9a-f]{64}, found SHA-256 [0-9a-f]{64}/);
    expect((error as Error).message).toContain('nothing is installed from it');
    expect(() => throwOnTreeProblems([], { packageName: 'pkg', host: 'edge-1', dir: tree })).not.toThrow();
  });
});
