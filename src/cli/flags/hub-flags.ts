/**
 * The flags of the hub's client commands (`hub token create`, `hub clusters …`,
 * `hub user create`, `kubeconfig`, `kubectl`), defined once so that every
 * command spells and explains them the same way. Spread them into a
 * command's `flags`, as with the SSH flags.
 */
import { Flags } from '@oclif/core';

/** Summary of `--hub-config`, shared so every command says the same. */
export const HUB_CONFIG_FLAG_SUMMARY =
  'Hub client config (server, CA, token). Default: $EDGEADM_HUB_CONFIG, then ~/.edgeadm/hub.yaml.';

/** `--hub-config FILE`: where the hub is, its CA, and the user's token. */
export const hubConfigFlags = {
  'hub-config': Flags.string({ summary: HUB_CONFIG_FLAG_SUMMARY, helpValue: 'FILE' }),
};

/** `--cluster NAME`: the registered cluster a command reaches through the hub. */
export const hubClusterFlags = {
  cluster: Flags.string({ required: true, summary: 'Name of the registered cluster.' }),
};
