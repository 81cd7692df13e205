import { Args } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';

export default class HubUserDelete extends BaseCommand<typeof HubUserDelete> {
  static override summary = "Delete a hub user: their token stops working at the user's next request.";
  static override description =
    'The hub admin made at the first start cannot be deleted (E_HUB_USER_ADMIN). A request already streaming ' +
    '(kubectl logs -f, a watch) runs to its end; it cannot be resumed with the deleted token.';
  static override examples = ['<%= config.bin %> hub user delete alice'];
  static override args = { name: Args.string({ required: true, description: 'User name.' }) };
  static override flags = { ...hubConfigFlags };

  async run(): Promise<{ name: string; isDeleted: boolean }> {
    const client = new HubClient(loadHubConfig(this.flags['hub-config']));
    const result = await client.deleteUser(this.args.name);
    this.log(`hub user ${result.name} deleted: their token no longer works`);
    return result;
  }
}
