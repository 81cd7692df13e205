/**
 * `runDistribution`: a fleet run sets up the distribution its install
 * packages are for; `--distribution` must agree with them, and packages for
 * different distributions are refused (one cluster runs one).
 */
import { describe, expect, it } from 'vitest';
import { runDistribution } from '../../../src/fleet/fleet-packages.js';
import type { ResolvedPackage } from '../../../src/packages/source.js';

/** Only the manifest's distribution matters here. */
function packageFor(distribution: 'k3s' | 'kubeadm'): ResolvedPackage {
  return { manifest: { distribution } } as ResolvedPackage;
}

function hostsWith(entries: Array<[string, 'k3s' | 'kubeadm']>): Map<string, ResolvedPackage> {
  return new Map(entries.map(([host, distribution]) => [host, packageFor(distribution)]));
}

describe('runDistribution', () => {
  it('is the distribution of the packages when --distribution is not given', () => {
    expect(
      runDistribution(
        hostsWith([
          ['cp1', 'kubeadm'],
          ['store-1', 'kubeadm'],
        ]),
        undefined,
      ),
    ).toBe('kubeadm');
    expect(runDistribution(hostsWith([['cp1', 'k3s']]), undefined)).toBe('k3s');
  });

  it('accepts --distribution when the packages are for it', () => {
    expect(runDistribution(hostsWith([['cp1', 'kubeadm']]), 'kubeadm')).toBe('kubeadm');
  });

  it('falls back to --distribution, then k3s, without packages', () => {
    expect(runDistribution(new Map(), 'kubeadm')).toBe('kubeadm');
    expect(runDistribution(new Map(), undefined)).toBe('k3s');
  });

  it('refuses --distribution that is not the packages', () => {
    expect(() =>
      runDistribution(
        hostsWith([
          ['cp1', 'kubeadm'],
          ['cp2', 'kubeadm'],
        ]),
        'k3s',
      ),
    ).toThrow(
      expect.objectContaining({
        code: 'E_PACKAGE_DISTRIBUTION',
        message: '--distribution k3s, but the install packages of cp1, cp2 are for kubeadm',
      }),
    );
  });

  it('refuses an unknown --distribution', () => {
    expect(() => runDistribution(hostsWith([['cp1', 'k3s']]), 'k0s')).toThrow(
      expect.objectContaining({ code: 'E_DISTRIBUTION_UNKNOWN' }),
    );
  });

  it('refuses packages for different distributions, naming a few hosts of each', () => {
    const stores = Array.from({ length: 7 }, (_, index): [string, 'k3s'] => [`store-${index + 1}`, 'k3s']);
    expect(() => runDistribution(hostsWith([['cp1', 'kubeadm'], ...stores]), undefined)).toThrow(
      expect.objectContaining({
        code: 'E_PACKAGE_DISTRIBUTION',
        message:
          'the install packages are for different distributions: kubeadm (cp1); k3s (store-1, store-2, store-3, store-4, store-5 and 2 more)',
      }),
    );
  });
});
