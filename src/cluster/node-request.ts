/**
 * What init's and join's requests share, parsed the same way for both: the
 * distribution, the install package and the keys that may sign it, the
 * Node's name and labels. Pure: the package and the keys are only named
 * here; reading them and verifying the package is the first I/O of the
 * workflow (on this machine, before any host).
 */
import { ValidationError } from '../errors.js';
import { isDns1123Subdomain, labelProblem } from '../kube/names.js';
import { parseNodeLabels } from './config.js';
import { distributionFor } from './distributions/index.js';

/** The parts of a node workflow's request that say what to install and as which Node. */
export interface NodeRequest {
  /** A distribution edgeadm knows (`k3s`, `kubeadm`). */
  distribution: string;
  /** `--install-pkg-path`: a local file or an http(s) URL, not yet read. */
  installPackage: string;
  /** `--trusted-key` (or `trustedKeys` in the config file): public key files, not yet read; none: the origin is not checked. */
  trustedKeyFiles: string[];
  /** The Node's name; the host's hostname when absent. */
  nodeName?: string;
  nodeLabels: Record<string, string>;
}

/** The same, as flags and the config file give it (merged, flags winning). */
export interface NodeInput {
  distribution: string;
  installPackage?: string;
  trustedKeys?: string[] | undefined;
  nodeName?: string;
  /** `--node-labels a=b,c=d`, when given; it replaces the file's labels. */
  nodeLabelsFlag?: string;
  /** The config file's labels (or the defaults'). */
  nodeLabels: Record<string, string>;
}

/**
 * Parses the node part of a request.
 *
 * @throws {ValidationError} `E_DISTRIBUTION_UNKNOWN`, `E_NO_PACKAGE`,
 * `E_FLAG_INVALID` (a label or node name Kubernetes would refuse).
 */
export function parseNodeRequest(input: NodeInput): NodeRequest {
  distributionFor(input.distribution);
  if (input.installPackage === undefined || input.installPackage === '') {
    throw new ValidationError('no install package: pass --install-pkg-path (a file or an http(s) URL)', {
      code: 'E_NO_PACKAGE',
      hints: ['edgeadm package build makes one from a directory with bin/k3s.'],
    });
  }
  const nodeLabels = parseNodeLabels(input.nodeLabelsFlag) ?? input.nodeLabels;
  const problem = labelProblem(nodeLabels);
  if (problem !== undefined) {
    throw new ValidationError(`node labels: ${problem}`, { code: 'E_FLAG_INVALID' });
  }
  if (input.nodeName !== undefined && !isDns1123Subdomain(input.nodeName)) {
    throw new ValidationError(
      `--node-name ${JSON.stringify(input.nodeName)} is not a valid Node name (lowercase letters, digits, - and ., at most 253)`,
      { code: 'E_FLAG_INVALID' },
    );
  }
  return {
    distribution: input.distribution,
    installPackage: input.installPackage,
    trustedKeyFiles: input.trustedKeys ?? [],
    ...(input.nodeName === undefined ? {} : { nodeName: input.nodeName }),
    nodeLabels,
  };
}
