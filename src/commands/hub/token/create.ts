import { Flags } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { HubClient, type CreatedHubToken } from '../../../hub-client/hub-client.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';
import { DEFAULT_HUB_TOKEN_TTL_MS } from '../../../hub/identity/hub-tokens.js';
import { parseTokenLabelLimit } from '../../../hub/identity/token-labels.js';
import { formatGoDuration, parseGoDuration } from '../../../trust/duration.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { CLUSTER_NAME_PLACEHOLDER, renderRegisterCloudCommand } from '../../../hub-client/register-command.js';

/** What `hub token create --json` prints. The token is a credential. */
export interface HubTokenCreateResult extends CreatedHubToken {
  command: string;
}

export default class HubTokenCreate extends BaseCommand<typeof HubTokenCreate> {
  static override summary = 'Create a hub token and print the register-cloud command.';
  static override examples = [
    '<%= config.bin %> hub token create --ttl 1h',
    '<%= config.bin %> hub token create --usages 1 --name store-042',
    '<%= config.bin %> hub token create --usages 1 --json',
    '<%= config.bin %> hub token create --labels env=dev,site=*',
  ];
  static override flags = {
    ...hubConfigFlags,
    ttl: Flags.string({
      summary: 'How long the token lives (Go duration; 0 = never expires).',
      default: formatGoDuration(DEFAULT_HUB_TOKEN_TTL_MS),
    }),
    usages: Flags.integer({
      summary: 'How many clusters the token may register (default: any number within the TTL).',
      min: 1,
    }),
    labels: Flags.string({
      summary: 'Limit the labels a cluster may register with: exactly these keys, each k=v or k=* (any value).',
      description:
        'A registration with another label, without one of these, or with another value is refused ' +
        '(E_HUB_TOKEN_LABELS). Without it, a token registers clusters with any labels, and so into any ' +
        "user's scope.",
    }),
    name: Flags.string({
      summary: `The cluster name to print in the register-cloud command (default: ${CLUSTER_NAME_PLACEHOLDER}, to replace); the token is not tied to it.`,
    }),
  };

  async run(): Promise<HubTokenCreateResult> {
    const client = new HubClient(loadHubConfig(this.flags['hub-config']));
    const created = await client.createToken({
      ttlMs: parseGoDuration(this.flags.ttl),
      ...(this.flags.usages === undefined ? {} : { usages: this.flags.usages }),
      ...(this.flags.labels === undefined ? {} : { labels: parseTokenLabelLimit(this.flags.labels) }),
    });
    this.redactor.addSecret(created.token);
    const command = renderRegisterCloudCommand(created, this.flags.name);
    this.log(command);
    if (this.flags.name === undefined) {
      this.logToStderr(
        `Replace ${CLUSTER_NAME_PLACEHOLDER} with the cluster's name (a lower-case DNS label), or pass --name.`,
      );
    }
    return { ...created, command };
  }
}
