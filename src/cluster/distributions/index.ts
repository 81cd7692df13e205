/** Choosing a distribution driver by name: k3s (the default) or kubeadm. */
import { ValidationError } from '../../errors.js';
import type { Distribution, DistributionName } from './distribution.js';
import { k3sDistribution } from './k3s.js';
import { kubeadmDistribution } from './kubeadm.js';

/** The default distribution. */
export const DEFAULT_DISTRIBUTION: DistributionName = 'k3s';

/**
 * The driver for `name`.
 *
 * @throws {ValidationError} `E_DISTRIBUTION_UNKNOWN` for any other name.
 */
export function distributionFor(name: string): Distribution {
  if (name === 'k3s') return k3sDistribution;
  if (name === 'kubeadm') return kubeadmDistribution;
  throw new ValidationError(`unknown distribution ${JSON.stringify(name)}: use k3s or kubeadm`, {
    code: 'E_DISTRIBUTION_UNKNOWN',
  });
}
