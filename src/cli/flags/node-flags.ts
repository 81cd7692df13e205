/**
 * Flags shared by init and join (and their `phase` subcommands), and the
 * reading of `--config` that their requests are parsed from.
 */
import { Flags } from '@oclif/core';
import { readFileSync } from 'node:fs';
import { ValidationError } from '../../errors.js';
import { dryRunFlag, ignorePreflightErrorsFlag, skipPhasesFlag } from './run-flags.js';
import { trustedKeyFlags } from '../package-trust-flags.js';

/** Splits repeatable, comma-separated flag values (the fleet commands' too). */
export { listFlag } from '../../cluster/run-request.js';

/** The Node's own settings; what the run takes (package, config, phases) stays with the main flags. */
const helpGroup = 'NODE';

/** Reads `--config FILE`. */
export function readConfigFile(path: string | undefined): { configText?: string; configFile?: string } {
  if (path === undefined) return {};
  try {
    return { configText: readFileSync(path, 'utf8'), configFile: path };
  } catch (error) {
    throw new ValidationError(`cannot read --config ${path}: ${(error as Error).message}`, {
      code: 'E_CONFIG_INVALID',
    });
  }
}

/** Flags of both init and join. */
export const nodeFlags = {
  config: Flags.string({ summary: 'An edgeadm configuration file (YAML); flags given win over it.' }),
  distribution: Flags.string({ summary: 'k3s (default) or kubeadm; the install package must be for it.' }),
  'install-pkg-path': Flags.string({
    summary: 'The offline install package: a .tar.gz file or an http(s) URL (edgeadm fetches it itself).',
  }),
  ...trustedKeyFlags,
  'dry-run': dryRunFlag('Print every file and command per phase; change nothing.'),
  'ignore-preflight-errors': ignorePreflightErrorsFlag,
  'skip-phases': skipPhasesFlag,
  'node-name': Flags.string({ summary: "The Node's name; default: the host's hostname.", helpGroup }),
  'node-labels': Flags.string({ summary: 'Labels for the Node: key=value,key=value.', helpGroup }),
  'enable-edge': Flags.boolean({
    summary:
      'Edge autonomy: init applies the edge addons; join installs the edge-proxy on the node, routes its kubelet through it, and labels and taints it.',
    helpGroup,
  }),
  'autonomy-duration': Flags.string({
    summary:
      'With --enable-edge: how long pods on edge nodes stay while their node is cut off from the control plane (Go duration; 0 = never evicted). init: the cluster default (24h); join: this node.',
    helpGroup,
  }),
};

/** join's `--site`: the site the node belongs to (docs/guides/site-grids.md). */
export const siteFlags = {
  site: Flags.string({
    summary:
      'The site this node belongs to (a DNS label, e.g. shop-lyon-1): labels the Node edgeadm.io/site and topology.kubernetes.io/zone with it, for site grids.',
    helpGroup,
  }),
};
