/**
 * Flag definitions the hub client commands share. Kept with the hub client
 * (not the CLI layer) only as plain data: it imports nothing from oclif itself.
 */

/** Summary of `--hub-config`, shared so every command says the same. */
export const HUB_CONFIG_FLAG_SUMMARY =
  'Hub client config (server, CA, token). Default: $EDGEADM_HUB_CONFIG, then ~/.edgeadm/hub.yaml.';
