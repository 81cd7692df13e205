import { describe, expect, it } from 'vitest';
import { checkEntryPath, checkPackagePath, parentDirectories } from '../../../src/packages/package-path.js';

describe('checkPackagePath', () => {
  it.each(['bin/k3s', 'images/k3s-airgap-images-amd64.tar.zst', 'a/b/c/d', 'x+y@z=1,2~3', '.hidden/file'])(
    'accepts %j',
    (path) => {
      expect(checkPackagePath(path)).toEqual({ ok: true, path });
    },
  );

  it.each([
    ['', 'empty'],
    ['/etc/passwd', 'absolute'],
    ['../x', '".."'],
    ['a/../../x', '".."'],
    ['./a', '"."'],
    ['a//b', 'empty component'],
    ['a/', 'empty component'],
    ['c:x', 'character'],
    ['a\\b', 'character'],
    ['a b', 'character'],
    ['bin/\u001b[31m', 'character'],
    ['caf\u00e9', 'character'],
    [`${'a'.repeat(256)}`, 'longer than 255'],
    [`${'a/'.repeat(600)}a`, 'longer than 1024'],
  ])('refuses %j (%s)', (path, reason) => {
    const check = checkPackagePath(path);
    expect(check.ok).toBe(false);
    expect(check.ok ? '' : check.reason).toContain(reason);
  });
});

describe('checkEntryPath', () => {
  it('removes the ./ prefix that tar -C dir . writes, and a directory trailing slash', () => {
    expect(checkEntryPath('./bin/k3s', false)).toEqual({ ok: true, path: 'bin/k3s' });
    expect(checkEntryPath('./bin/', true)).toEqual({ ok: true, path: 'bin' });
  });

  it('refuses the archive root directory, whose mode GNU tar would give to the unpack directory', () => {
    for (const root of ['./', '.', '']) {
      const check = checkEntryPath(root, true);
      expect(check.ok ? '' : check.reason).toContain('archive root');
      expect(checkEntryPath(root, false).ok).toBe(false);
    }
  });

  it('removes one ./ only: a repeated one, // or a slash after a file name is refused', () => {
    for (const [raw, isDirectory] of [
      ['././bin/k3s', false],
      ['.//bin/k3s', false],
      ['bin//k3s', false],
      ['bin/k3s/', false],
      ['bin//', true],
      ['/bin/k3s', false],
    ] as const) {
      expect(checkEntryPath(raw, isDirectory).ok, raw).toBe(false);
    }
  });

  it('does not strip a trailing slash from a file', () => {
    expect(checkEntryPath('bin/k3s/', false).ok).toBe(false);
  });
});

describe('parentDirectories', () => {
  it('lists the parents outermost first', () => {
    expect(parentDirectories('a/b/c')).toEqual(['a', 'a/b']);
    expect(parentDirectories('a')).toEqual([]);
  });
});
