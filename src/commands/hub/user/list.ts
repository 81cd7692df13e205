import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { renderUserTable } from '../../../hub-client/access-tables.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';
import type { HubUserView } from '../../../hub/contract/views.js';

export default class HubUserList extends BaseCommand<typeof HubUserList> {
  static override summary = 'List the hub users: the clusters each reaches, their groups and expiry (never a token).';
  static override examples = ['<%= config.bin %> hub user list', '<%= config.bin %> hub user list --json'];
  static override flags = { ...hubConfigFlags };

  async run(): Promise<{ users: HubUserView[] }> {
    const users = await new HubClient(loadHubConfig(this.flags['hub-config'])).listUsers();
    this.log(renderUserTable(users));
    return { users };
  }
}
