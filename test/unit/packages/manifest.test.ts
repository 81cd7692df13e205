import { describe, expect, it } from 'vitest';
import { PackageError } from '../../../src/packages/errors.js';
import { DEFAULT_PACKAGE_LIMITS, resolveLimits } from '../../../src/packages/limits.js';
import {
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
    const error = refusal(manifest({ files: [{ path: 'manifest.json', sha256: SHA, size: 1, mode: '0644' }] }));
    expect(error.code).toBe('E_PACKAGE_MANIFEST');
  });

  it('refuses a file under manifest.json, which unpacking could not create next to the manifest', () => {
    const error = refusal(manifest({ files: [{ path: 'manifest.json/x', sha256: SHA, size: 1, mode: '0644' }] }));
    expect(error.code).toBe('E_PACKAGE_MANIFEST');
    expect(error.entry).toBe('manifest.json/x');
  });

  it('enforces the per-file, total and count limits', () => {
    const limits = resolveLimits({ maxEntryBytes: 15, maxTotalBytes: 25, maxEntries: 3 });
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
        files: ['a', 'b', 'c'].map((path) => ({ path, sha256: SHA, size: 1, mode: '0644' })),
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
      expect.objectContaining({ code: 'E_PACKAGE_MANIFEST', entry: 'manifest.json' }),
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
