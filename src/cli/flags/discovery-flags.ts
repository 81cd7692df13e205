/**
 * Token discovery's flags, kubeadm's names: the bootstrap token, the CA
 * pins, the unsafe skip and the timeout. `join`, `join phase discovery` and
 * `fleet join` take them; `parseDiscoveryRequest` checks them.
 */
import { Flags } from '@oclif/core';

/** How long discovery keeps trying when `--discovery-timeout` is not given (kubeadm's default). */
export const DEFAULT_DISCOVERY_TIMEOUT = '5m0s';

const token = { summary: 'The bootstrap token, <id>.<secret>.' } as const;

/** The discovery flags; the token may come from elsewhere (join's --config). */
export const discoveryFlags = {
  token: Flags.string(token),
  'discovery-token-ca-cert-hash': Flags.string({
    summary:
      'Pin of the cluster CA, sha256:<hex> ("edgeadm certs ca-hash" prints it). Repeatable: any one matching is enough.',
    multiple: true,
  }),
  'discovery-token-unsafe-skip-ca-verification': Flags.boolean({
    summary: 'Trust the CA in cluster-info without a pin. Only on a network you trust.',
  }),
  'discovery-timeout': Flags.string({
    summary: `How long discovery keeps trying, as a Go duration (30s, 5m, 1h). Default ${DEFAULT_DISCOVERY_TIMEOUT}.`,
  }),
};

/** The discovery flags with the token required (commands without a config file to take it from). */
export const requiredTokenDiscoveryFlags = { ...discoveryFlags, token: Flags.string({ ...token, required: true }) };
