/**
 * Choosing a distribution driver by name. k3s is built; the kubeadm driver
 * is planned and says so.
 */
import { ValidationError } from '../../errors.js';
import type { Distribution, DistributionName } from './distribution.js';
import { k3sDistribution } from './k3s.js';

/** The default distribution. */
export const DEFAULT_DISTRIBUTION: DistributionName = 'k3s';

/**
 * The driver for `name`.
 *
 * @throws {ValidationError} `E_NOT_BUILT` for kubeadm, `E_DISTRIBUTION_UNKNOWN` otherwise.
 */
export function distributionFor(name: string): Distribution {
  if (name === 'k3s') return k3sDistribution;
  if (name === 'kubeadm') {
    throw new ValidationError(
      'the kubeadm distribution is not built yet in this version of edgeadm; nothing was done',
      {
        code: 'E_NOT_BUILT',
        hints: ['Use --distribution k3s (the default) and a k3s install package.'],
      },
    );
  }
  throw new ValidationError(`unknown distribution ${JSON.stringify(name)}: use k3s`, {
    code: 'E_DISTRIBUTION_UNKNOWN',
  });
}
