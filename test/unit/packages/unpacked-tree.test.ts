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
    expect(compareUnpackedTree('f 644 manifest.json\u0000', verified.manifest, verified.manifestSha256)).toEqual([
      { path: '.', expected: 'a complete listing', found: 'output cut short' },
    ]);
  });

  it('reads a listing whose end marker comes first as complete, and empty', () => {
    const problems = compareUnpackedTree('\u0000\u0000', verified.manifest, verified.manifestSha256);
    expect(problems).toContainEqual({ path: 'manifest.json', expected: 'a regular file', found: 'nothing' });
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

describe('compareUnpackedTree on listings no real tree gives', () => {
  /** The listing of a freshly unpacked tree, for the tests below to change. */
  async function listing(): Promise<string> {
    const { stdout } = await execa('sh', ['-c', unpackedTreeListingCommand()], { cwd: tree, stripFinalNewline: false });
    return stdout;
  }
  const compare = (text: string, options = {}) =>
    compareUnpackedTree(text, verified.manifest, verified.manifestSha256, options);
  const k3s = () => verified.manifest.files.find((f) => f.path === 'bin/k3s')!;

  it('reports each entry type by name where a regular file belongs', async () => {
    const text = await listing();
    for (const [type, name] of [
      ['p', 'a FIFO'],
      ['s', 'a socket'],
      ['c', 'a character device'],
      ['b', 'a block device'],
      ['d', 'a directory'],
      ['D', 'an entry of type D'],
    ]) {
      const changed = text.replace('f 755 bin/k3s\u0000', `${type} 755 bin/k3s\u0000`);
      expect(compare(changed), type).toEqual([{ path: 'bin/k3s', expected: 'a regular file', found: name }]);
    }
  });

  it('reports a record it cannot read, and an entry listed twice', async () => {
    const text = await listing();
    expect(compare(`garbage\u0000${text}`)).toEqual([
      { path: 'garbage', expected: 'a listing record', found: '"garbage"' },
    ]);
    expect(compare(`f 755 bin/k3s\u0000${text}`)).toEqual([{ path: 'bin/k3s', expected: 'one entry', found: 'two' }]);
    expect(compare(`xf 755 bin/extra\u0000${text}`)).toEqual([
      { path: 'xf 755 bin/extra', expected: 'a listing record', found: '"xf 755 bin/extra"' },
    ]);
    expect(compare(`f 7558 bin/k3s\u0000${text}`)).toContainEqual({
      path: 'f 7558 bin/k3s',
      expected: 'a listing record',
      found: '"f 7558 bin/k3s"',
    });
  });

  it('reports a hash line it cannot read, cut to 200 characters, and a file without one', async () => {
    const text = await listing();
    const line = `${k3s().sha256}  ./bin/k3s`;
    expect(text).toContain(`${line}\n`);
    const long = `x${'y'.repeat(300)}`;
    expect(compare(text.replace(`${line}\n`, `${line}\n${long}\n`))).toEqual([
      { path: long.slice(0, 200), expected: 'a sha256sum line', found: JSON.stringify(long.slice(0, 200)) },
    ]);
    expect(compare(text.replace(`${line}\n`, ''))).toEqual([
      { path: 'bin/k3s', expected: `SHA-256 ${k3s().sha256}`, found: 'no SHA-256' },
    ]);
    expect(compare(text.replace(`${line}\n`, `${line}\nz${line.replace('bin/k3s', 'bin/k3s.old')}\n`))).toEqual([
      expect.objectContaining({ expected: 'a sha256sum line' }),
    ]);
    expect(compare(text.replace(`${line}\n`, `${line} x\n`))).toContainEqual(
      expect.objectContaining({ expected: 'a sha256sum line' }),
    );
  });

  it('expects manifest.json as a regular file of mode 0644, and names modes as four octal digits', async () => {
    const text = await listing();
    expect(text).toContain('f 644 manifest.json\u0000');
    expect(compare(text.replace('f 644 manifest.json', 'f 600 manifest.json'))).toEqual([
      { path: 'manifest.json', expected: 'mode 0644', found: 'mode 0600' },
    ]);
    expect(compare(text.replace('f 755 bin/k3s', 'f 700 bin/k3s'))).toEqual([
      { path: 'bin/k3s', expected: 'mode 0755', found: 'mode 0700' },
    ]);
  });

  it('allows the unpack marker only as a regular file, and a directory only where a listed file needs it', async () => {
    const text = await listing();
    const withMarkerDir = `${text.slice(0, text.indexOf('\u0000\u0000'))}\u0000d 700 .edgeadm-archive-sha256${text.slice(text.indexOf('\u0000\u0000'))}`;
    expect(compare(withMarkerDir, { extraFile: '.edgeadm-archive-sha256' })).toEqual([
      { path: '.edgeadm-archive-sha256', expected: 'nothing (the manifest does not list it)', found: 'a directory' },
    ]);
    const fileAsDir = text.replace('d 755 bin\u0000', 'f 755 bin\u0000');
    expect(compare(fileAsDir)).toEqual([
      { path: 'bin', expected: 'nothing (the manifest does not list it)', found: 'a regular file' },
    ]);
  });
});

describe('throwOnTreeProblems', () => {
  const where = { packageName: 'edge-k3s', host: 'edge-1', dir: '/var/lib/edgeadm/packages/x' };
  const problems = Array.from({ length: 60 }, (_, i) => ({
    path: `f${i}`,
    expected: 'a regular file',
    found: 'nothing',
  }));
  const thrown = (list: typeof problems) => {
    try {
      throwOnTreeProblems(list, where);
    } catch (error) {
      if (isPackageError(error)) return error;
      throw error;
    }
    throw new Error('expected a throw');
  };

  it('spells out the first three differences, counts the rest, and keeps fifty in the details', () => {
    const error = thrown(problems);
    expect(error.message).toBe(
      'the package edge-k3s as unpacked on edge-1 in /var/lib/edgeadm/packages/x is not what was verified: ' +
        '"f0": expected a regular file, found nothing; "f1": expected a regular file, found nothing; ' +
        '"f2": expected a regular file, found nothing (and 57 more); it was removed and nothing is installed from it',
    );
    expect(error.entry).toBe('f0');
    expect(error.exitCode).toBe(3);
    expect(error.details).toMatchObject({ host: 'edge-1', dir: where.dir });
    expect(error.details?.problems).toEqual(problems.slice(0, 50));
  });

  it('says nothing of "more" when three or fewer differ', () => {
    expect(thrown(problems.slice(0, 3)).message).toMatch(
      /"f2": expected a regular file, found nothing; it was removed/,
    );
    expect(thrown(problems.slice(0, 4)).message).toContain('(and 1 more)');
  });
});
