/**
 * The names a package may carry under bin/ (ALLOWED_PACKAGE_BINARIES):
 * what a distribution installs passes, a host tool's name does not.
 */
import { describe, expect, it } from 'vitest';
import { REQUIRED_PACKAGE_FILES, unexpectedBinaries } from '../../../src/packages/manifest.js';

const files = (...paths: string[]) => paths.map((path) => ({ path, sha256: 'a'.repeat(64), mode: '0755', size: 1 }));

describe('unexpectedBinaries', () => {
  it("passes each distribution's required binaries, kubectl and edgeadm", () => {
    for (const distribution of ['k3s', 'kubeadm'] as const) {
      const manifest = {
        distribution,
        files: files(...REQUIRED_PACKAGE_FILES[distribution], 'bin/kubectl', 'bin/edgeadm'),
      };
      expect(unexpectedBinaries(manifest), distribution).toEqual([]);
    }
  });

  it('refuses names that would shadow host tools, and another distribution’s binaries', () => {
    const manifest = {
      distribution: 'k3s' as const,
      files: files('bin/k3s', 'bin/sha256sum', 'bin/tar', 'bin/cp', 'bin/sudo', 'bin/kubelet', 'images/a.tar'),
    };
    expect(unexpectedBinaries(manifest)).toEqual(['bin/sha256sum', 'bin/tar', 'bin/cp', 'bin/sudo', 'bin/kubelet']);
  });
});
