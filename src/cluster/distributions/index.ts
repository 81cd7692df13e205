/** Choosing a distribution driver by name: k3s (the default) or kubeadm. */
import { ValidationError } from '../../errors.js';
import type { Distribution, DistributionFeature, DistributionName } from './distribution.js';
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

/** The flags that ask for each feature, for messages. */
const FEATURE_FLAGS: Record<DistributionFeature, string> = {
  'control-plane-join': '--control-plane-endpoint, --upload-certs and join --control-plane',
  'edge-node': 'join --enable-edge',
};

/**
 * Refuses a workflow the driver does not have, before any host is reached.
 *
 * @throws {ValidationError} `E_NOT_BUILT` (exit 3) naming the flags and the distribution that has it.
 */
export function requireDistributionFeature(distribution: Distribution, feature: DistributionFeature): void {
  if (distribution.features.includes(feature)) return;
  throw new ValidationError(
    `${FEATURE_FLAGS[feature]} ${feature === 'edge-node' ? 'is' : 'are'} not built for the ${distribution.name} distribution in this version of edgeadm; nothing was done`,
    { code: 'E_NOT_BUILT', hints: ['Use --distribution k3s (the default) and a k3s install package for this.'] },
  );
}
