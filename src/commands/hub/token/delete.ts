import { Args } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { HubClient, hubTokenId } from '../../../hub-client/hub-client.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';

export default class HubTokenDelete extends BaseCommand<typeof HubTokenDelete> {
  static override summary = 'Delete a hub token (by id or the whole token): it registers no more clusters.';
  static override description =
    'The token leaves the discovery document at once, so register-cloud with it is refused from then on. ' +
    'Clusters it registered before stay registered: remove one with "hub clusters delete".';
  static override examples = ['<%= config.bin %> hub token delete abcdef'];
  static override args = {
    token: Args.string({
      required: true,
      description: 'Token id ([a-z0-9]{6}, as hub token list shows) or the whole token.',
    }),
  };
  static override flags = { ...hubConfigFlags };

  async run(): Promise<{ id: string; isDeleted: boolean }> {
    const id = hubTokenId(this.args.token);
    const result = await new HubClient(loadHubConfig(this.flags['hub-config'])).deleteToken(id);
    this.log(`hub token ${result.id} deleted: it registers no more clusters`);
    return result;
  }
}
