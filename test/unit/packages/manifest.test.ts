import { describe, expect, it } from 'vitest';
import { PackageError } from '../../../src/packages/errors.js';
import { DEFAULT_PACKAGE_LIMITS, resolveLimits } from '../../../src/packages/limits.js';
import {
  comparePaths,
  isKubernetesVersion,
  isPackageName,
  modeBits,
  modeString,
  parseManifest,
  renderManifest,
  validateManifest,
  type PackageManifest,
} from '../../../src/packages/manifest.js';

const SHA = 'a'.repeat(64);

function manifest(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    formatVersion: 1,
    name: 'edge-k3s-v1.30.4-amd64',
    distribution: 'k3s',
    kubernetesVersion: 'v1.30.4+k3s1',
    arch: 'amd64',
    createdAt: '2024-05-01T12:00:00.000Z',
    files: [
      { path: 'bin/k3s', sha256: SHA, size: 10, mode: '0755' },
      { path: 'images/airgap.tar.zst', sha256: SHA, size: 20, mode: '0644' },
    ],
    ...overrides,
  };
}

function refusal(value: unknown, limits = DEFAULT_PACKAGE_LIMITS): PackageError {
  try {
    validateManifest(value, limits);
  } catch (error) {
    expect(error).toBeInstanceOf(PackageError);
    return error as PackageError;
  }
  throw new Error('expected the manifest to be refused');
}

describe('validateManifest', () => {
  it('accepts a well-formed manifest and returns it typed', () => {
    const valid = validateManifest(manifest());
    expect(valid.files.map((file) => file.path)).toEqual(['bin/k3s', 'images/airgap.tar.zst']);
    expect(valid.kubernetesVersion).toBe('v1.30.4+k3s1');
  });

  it.each([
    ['formatVersion', { formatVersion: 2 }, 'format version 2 is not supported'],
    ['name', { name: '../evil' }, 'field name'],
    ['distribution', { distribution: 'rke2' }, 'must be one of k3s, kubeadm (got "rke2")'],
    ['kubernetesVersion', { kubernetesVersion: '1.30' }, 'field kubernetesVersion'],
    ['arch', { arch: 'x86_64' }, 'must be one of amd64, arm64'],
    ['createdAt', { createdAt: 'yesterday' }, 'field createdAt'],
    ['createdAt', { createdAt: '2024-13-45T99:00:00Z' }, 'not a real date'],
    ['files', { files: {} }, 'field files must be an array'],
    ['signature', { signature: 'x' }, 'field signature is not a manifest field'],
  ])('refuses a bad %s with E_PACKAGE_MANIFEST naming the field', (field, overrides, text) => {
    const error = refusal(manifest(overrides));
    expect(error.code).toBe('E_PACKAGE_MANIFEST');
    expect(error.details?.field).toBe(field);
    expect(error.message).toContain(text);
  });

  it.each([
    ['sha256', { sha256: 'ABC' }],
    ['size', { size: -1 }],
    ['size', { size: 1.5 }],
    ['mode', { mode: '4755' }],
    ['mode', { mode: 493 }],
    ['owner', { owner: 'root' }],
  ])('refuses a bad file %s, naming files[0] and the file', (field, overrides) => {
    const files = [{ path: 'bin/k3s', sha256: SHA, size: 10, mode: '0755', ...overrides }];
    const error = refusal(manifest({ files }));
    expect(error.code).toBe('E_PACKAGE_MANIFEST');
    expect(error.details?.field).toBe(`files[0].${field}`);
    expect(error.entry).toBe('bin/k3s');
  });

  it.each(['../x', '/etc/passwd', 'bin/../x', './bin/k3s', 'bin//k3s', 'bin/k3s/', 'bin/k 3s', 'c:evil', 'bin\\x'])(
    'refuses the file path %j as E_PACKAGE_UNSAFE_PATH',
    (path) => {
      const error = refusal(manifest({ files: [{ path, sha256: SHA, size: 1, mode: '0644' }] }));
      expect(error.code).toBe('E_PACKAGE_UNSAFE_PATH');
      expect(error.entry).toBe(path);
      expect(error.details?.field).toBe('files[0].path');
    },
  );

  it('refuses a path listed twice', () => {
    const file = { path: 'bin/k3s', sha256: SHA, size: 1, mode: '0755' };
    const error = refusal(manifest({ files: [file, file] }));
    expect(error.code).toBe('E_PACKAGE_DUPLICATE');
    expect(error.message).toBe('manifest lists "bin/k3s" twice');
    expect(error.details?.field).toBe('files[1].path');
  });

  it('refuses a file listed under another file', () => {
    const error = refusal(
      manifest({
        files: [
          { path: 'bin', sha256: SHA, size: 1, mode: '0755' },
          { path: 'bin/k3s', sha256: SHA, size: 1, mode: '0755' },
        ],
      }),
    );
    expect(error.code).toBe('E_PACKAGE_MANIFEST');
    expect(error.entry).toBe('bin/k3s');
  });

  it('refuses manifest.json as a listed file', () => {
    const error = refusal(
      manifest({
        files: [{ path: 'manifest.json', sha256: SHA, size: 1, mode: '0644' }],
      }),
    );
    expect(error.code).toBe('E_PACKAGE_MANIFEST');
  });

  it('refuses a file under manifest.json, which unpacking could not create next to the manifest', () => {
    const error = refusal(
      manifest({
        files: [{ path: 'manifest.json/x', sha256: SHA, size: 1, mode: '0644' }],
      }),
    );
    expect(error.code).toBe('E_PACKAGE_MANIFEST');
    expect(error.entry).toBe('manifest.json/x');
  });

  it('enforces the per-file, total and count limits', () => {
    const limits = resolveLimits({
      maxEntryBytes: 15,
      maxTotalBytes: 25,
      maxEntries: 3,
    });
    const oneFile = refusal(manifest({ files: [{ path: 'a', sha256: SHA, size: 16, mode: '0644' }] }), limits);
    expect(oneFile.code).toBe('E_PACKAGE_TOO_LARGE');
    expect(oneFile.entry).toBe('a');
    const total = refusal(
      manifest({
        files: [
          { path: 'a', sha256: SHA, size: 15, mode: '0644' },
          { path: 'b', sha256: SHA, size: 15, mode: '0644' },
        ],
      }),
      limits,
    );
    expect(total.code).toBe('E_PACKAGE_TOO_LARGE');
    const count = refusal(
      manifest({
        files: ['a', 'b', 'c'].map((path) => ({
          path,
          sha256: SHA,
          size: 1,
          mode: '0644',
        })),
      }),
      limits,
    );
    expect(count.code).toBe('E_PACKAGE_TOO_LARGE');
  });
});

describe('parseManifest and renderManifest', () => {
  it('round-trips, with files sorted and the same bytes for the same manifest', () => {
    const original = validateManifest(manifest()) as PackageManifest;
    const shuffled = { ...original, files: [...original.files].reverse() };
    const bytes = renderManifest(shuffled);
    expect(bytes.equals(renderManifest(original))).toBe(true);
    expect(parseManifest(bytes)).toEqual(original);
  });

  it('reports invalid JSON as E_PACKAGE_MANIFEST on manifest.json', () => {
    expect(() => parseManifest(Buffer.from('{"name":'))).toThrow(
      expect.objectContaining({
        code: 'E_PACKAGE_MANIFEST',
        entry: 'manifest.json',
      }),
    );
  });
});

describe('modes', () => {
  it('converts between permission bits and the manifest form, dropping special bits', () => {
    expect(modeString(0o100755)).toBe('0755');
    expect(modeString(0o4750)).toBe('0750');
    expect(modeBits('0640')).toBe(0o640);
  });
});

describe('validateManifest, message by message', () => {
  it('asks for the number 1 when formatVersion is not a number, and hints at a newer edgeadm when it is another number', () => {
    const text = refusal(manifest({ formatVersion: '1' }));
    expect(text.message).toBe('manifest.json field formatVersion must be the number 1');
    expect(text.hints).not.toContain('Use the edgeadm version that built this package, or a newer one.');
    const newer = refusal(manifest({ formatVersion: 2 }));
    expect(newer.message).toBe(
      'manifest.json field formatVersion format version 2 is not supported; this edgeadm reads version 1',
    );
    expect(newer.hints).toEqual(['Use the edgeadm version that built this package, or a newer one.']);
  });

  it.each([
    ['name', undefined, 'got missing'],
    ['name', 5, 'got number'],
    ['name', '../evil', 'got "../evil"'],
    ['distribution', undefined, 'got missing'],
    ['distribution', ['k3s'], 'got object'],
    ['arch', 'x86_64', 'got "x86_64"'],
  ])('says what %s was (%j) when it is wrong', (field, value, got) => {
    const error = refusal(manifest({ [field]: value }));
    expect(error.message).toMatch(
      new RegExp(`^manifest\\.json field ${field} must be .*\\(${got.replace(/[.()]/g, '\\$&')}\\)$`),
    );
    expect(error.entry).toBe('manifest.json');
    expect(error.details).toMatchObject({ field });
  });

  it('names the expected form of each string field', () => {
    expect(refusal(manifest({ name: '' })).message).toContain(
      'must be a name of letters, digits and . _ + - (at most 128 characters)',
    );
    expect(refusal(manifest({ kubernetesVersion: '1.30' })).message).toContain('must be a version such as v1.30.4');
    expect(refusal(manifest({ createdAt: 'now' })).message).toContain(
      'must be an ISO 8601 UTC time such as 2024-05-01T12:00:00Z',
    );
    expect(refusal(manifest({ distribution: 'rke2' })).message).toBe(
      'manifest.json field distribution must be one of k3s, kubeadm (got "rke2")',
    );
    expect(refusal(manifest({ createdAt: '2024-13-45T99:00:00Z' })).message).toBe(
      'manifest.json field createdAt "2024-13-45T99:00:00Z" is not a real date',
    );
  });

  it.each([
    ['an array', []],
    ['null', null],
    ['a string', 'manifest'],
  ])('refuses a manifest that is %s', (_name, value) => {
    const error = refusal(value);
    expect(error.message).toBe('manifest.json field manifest must be an object');
    expect(error.details).toMatchObject({ field: 'manifest' });
  });

  it('refuses a file entry that is not an object, naming its index', () => {
    const error = refusal(
      manifest({
        files: [{ path: 'a', sha256: SHA, size: 1, mode: '0644' }, null],
      }),
    );
    expect(error.message).toBe('manifest.json field files[1] must be an object');
  });

  it('names the file of a bad or unknown file field, and the manifest for an unknown top-level one', () => {
    const unknown = refusal(
      manifest({
        files: [{ path: 'bin/k3s', sha256: SHA, size: 1, mode: '0755', uid: 0 }],
      }),
    );
    expect(unknown.message).toBe('manifest.json field files[0].uid is not a manifest field');
    expect(unknown.entry).toBe('bin/k3s');
    const pathless = refusal(
      manifest({
        files: [{ path: 7, sha256: SHA, size: 1, mode: '0755', uid: 0 }],
      }),
    );
    expect(pathless.entry).toBe('manifest.json');
    const notString = refusal(manifest({ files: [{ path: 7, sha256: SHA, size: 1, mode: '0755' }] }));
    expect(notString.message).toBe('manifest.json field files[0].path must be a string');
    expect(notString.details).toMatchObject({ field: 'files[0].path' });
    expect(refusal(manifest({ signature: 'x' })).entry).toBe('manifest.json');
  });

  it.each([
    ['a string', '10'],
    ['NaN', Number.NaN],
    ['infinite', Number.POSITIVE_INFINITY],
    ['beyond the safe integers', 2 ** 53],
  ])('refuses a file size that is %s', (_name, size) => {
    const error = refusal(
      manifest({
        files: [{ path: 'bin/k3s', sha256: SHA, size, mode: '0755' }],
      }),
    );
    expect(error.message).toBe('manifest.json field files[0].size must be a non-negative integer');
    expect(error.entry).toBe('bin/k3s');
  });

  it('accepts a size of 0 and a mode 0000, and refuses sha256 and mode by their expected form', () => {
    expect(() =>
      validateManifest(
        manifest({
          files: [{ path: 'a', sha256: SHA, size: 0, mode: '0000' }],
        }),
      ),
    ).not.toThrow();
    expect(
      refusal(
        manifest({
          files: [{ path: 'a', sha256: SHA.toUpperCase(), size: 0, mode: '0644' }],
        }),
      ).message,
    ).toBe(`manifest.json field files[0].sha256 must be 64 lowercase hex digits (got "${SHA.toUpperCase()}")`);
    expect(
      refusal(
        manifest({
          files: [{ path: 'a', sha256: SHA, size: 0, mode: '04755' }],
        }),
      ).message,
    ).toBe(
      'manifest.json field files[0].mode must be four octal digits such as "0755" (no setuid, setgid or sticky bit) (got "04755")',
    );
  });

  it('refuses a path unsafe for the path rules with the reason, and manifest.json as reserved', () => {
    const unsafe = refusal(
      manifest({
        files: [{ path: '../x', sha256: SHA, size: 1, mode: '0644' }],
      }),
    );
    expect(unsafe.message).toMatch(/^manifest lists "\.\.\/x": /);
    const reserved = refusal(
      manifest({
        files: [{ path: 'manifest.json', sha256: SHA, size: 1, mode: '0644' }],
      }),
    );
    expect(reserved.message).toBe(
      'manifest.json field files[0].path manifest.json is reserved for the manifest itself',
    );
    expect(reserved.entry).toBe('manifest.json');
    expect(reserved.details).toMatchObject({ field: 'files[0].path' });
    expect(() =>
      validateManifest(
        manifest({
          files: [{ path: 'manifest.json.d/x', sha256: SHA, size: 1, mode: '0644' }],
        }),
      ),
    ).not.toThrow();
  });

  it('refuses a file under a listed file, naming both', () => {
    const error = refusal(
      manifest({
        files: [
          { path: 'bin/k3s', sha256: SHA, size: 1, mode: '0755' },
          { path: 'bin/k3s/x', sha256: SHA, size: 1, mode: '0755' },
        ],
      }),
    );
    expect(error.message).toBe(
      'manifest.json field files[1].path "bin/k3s/x" lies under "bin/k3s", which is listed as a file',
    );
    expect(error.details).toMatchObject({ field: 'files[1].path' });
  });

  it('takes the limits at their exact values, and names them when they are passed', () => {
    const limits = resolveLimits({
      maxEntryBytes: 15,
      maxTotalBytes: 30,
      maxEntries: 3,
    });
    const files = (sizes: number[]) =>
      sizes.map((size, i) => ({
        path: `f${i}`,
        sha256: SHA,
        size,
        mode: '0644',
      }));
    expect(validateManifest(manifest({ files: files([15, 15]) }), limits).files).toHaveLength(2);
    const one = refusal(manifest({ files: files([16]) }), limits);
    expect(one.message).toBe('manifest lists "f0" with 16 bytes; the limit per file is 15');
    expect(one.details).toMatchObject({
      field: 'files[0].size',
      size: 16,
      limit: 15,
    });
    const total = refusal(
      manifest({ files: files([15, 15]) }),
      resolveLimits({ maxEntryBytes: 15, maxTotalBytes: 29, maxEntries: 3 }),
    );
    expect(total.message).toBe('manifest lists 30 bytes of files; the limit is 29');
    expect(total.entry).toBe('manifest.json');
    expect(total.details).toMatchObject({
      field: 'files',
      total: 30,
      limit: 29,
    });
    const count = refusal(manifest({ files: files([1, 1, 1]) }), limits);
    expect(count.message).toBe('manifest field files lists 3 files; the limit is 2');
    expect(count.entry).toBe('manifest.json');
    expect(count.details).toMatchObject({ field: 'files', limit: 3 });
  });

  it('returns exactly the fields it checked, with formatVersion 1', () => {
    const valid = validateManifest(manifest({ files: [{ path: 'a', sha256: SHA, size: 1, mode: '0644' }] }));
    expect(valid).toEqual({
      formatVersion: 1,
      name: 'edge-k3s-v1.30.4-amd64',
      distribution: 'k3s',
      kubernetesVersion: 'v1.30.4+k3s1',
      arch: 'amd64',
      createdAt: '2024-05-01T12:00:00.000Z',
      files: [{ path: 'a', sha256: SHA, size: 1, mode: '0644' }],
    });
  });
});

describe('the canonical manifest bytes', () => {
  it('are two-space JSON in a fixed key order, files sorted by code unit, and a final newline', () => {
    const bytes = renderManifest({
      formatVersion: 1,
      name: 'p',
      distribution: 'k3s',
      kubernetesVersion: 'v1.30.4',
      arch: 'arm64',
      createdAt: '2024-05-01T12:00:00Z',
      files: [
        { mode: '0644', size: 1, sha256: SHA, path: 'b' },
        { path: 'B', sha256: SHA, size: 2, mode: '0755' },
        { path: 'a', sha256: SHA, size: 3, mode: '0600' },
      ],
    });
    const file = (path: string, size: number, mode: string) =>
      `    {\n      "path": "${path}",\n      "sha256": "${SHA}",\n      "size": ${size},\n      "mode": "${mode}"\n    }`;
    expect(bytes.toString('utf8')).toBe(
      `{\n  "formatVersion": 1,\n  "name": "p",\n  "distribution": "k3s",\n  "kubernetesVersion": "v1.30.4",\n  "arch": "arm64",\n  "createdAt": "2024-05-01T12:00:00Z",\n  "files": [\n${[file('B', 2, '0755'), file('a', 3, '0600'), file('b', 1, '0644')].join(',\n')}\n  ]\n}\n`,
    );
  });

  it('order paths by code unit, equal paths as equal', () => {
    expect(comparePaths('B', 'a')).toBe(-1);
    expect(comparePaths('a', 'B')).toBe(1);
    expect(comparePaths('a', 'a')).toBe(0);
  });

  it('report invalid JSON with the parser message and its cause', () => {
    let error: unknown;
    try {
      parseManifest(Buffer.from('{"name":'));
    } catch (caught) {
      error = caught;
    }
    expect((error as Error).message).toMatch(/^manifest\.json is not valid JSON: /);
    expect((error as Error).cause).toBeInstanceOf(SyntaxError);
  });

  it('pass the limits given to parseManifest on to the checks', () => {
    const bytes = renderManifest(validateManifest(manifest()));
    expect(() => parseManifest(bytes, resolveLimits({ maxEntryBytes: 19 }))).toThrow(
      expect.objectContaining({ code: 'E_PACKAGE_TOO_LARGE' }),
    );
  });
});

describe('names and versions as build checks them', () => {
  it.each(['v1.30.4', 'v1.30.4+k3s1', 'v1.31.0-rc.1'])('%s is a Kubernetes version', (version) => {
    expect(isKubernetesVersion(version)).toBe(true);
  });
  it.each(['1.30.4', 'v1.30', 'v1.30.4 ', 'v1.30.4+'])('%j is not', (version) => {
    expect(isKubernetesVersion(version)).toBe(false);
  });
  it('package names', () => {
    expect(isPackageName('edge-k3s-v1.30.4-amd64')).toBe(true);
    expect(isPackageName('a'.repeat(128))).toBe(true);
    expect(isPackageName('a'.repeat(129))).toBe(false);
    expect(isPackageName('.hidden')).toBe(false);
  });
  it('mode strings always have four digits', () => {
    expect(modeString(0o7)).toBe('0007');
    expect(modeString(0)).toBe('0000');
  });
});
