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

  it('reports the archive root directory as the empty path, and refuses it for a file', () => {
    expect(checkEntryPath('./', true)).toEqual({ ok: true, path: '' });
    expect(checkEntryPath('./', false).ok).toBe(false);
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
