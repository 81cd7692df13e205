import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { renderTokenTable } from '../../../hub-client/access-tables.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';
import type { HubTokenView } from '../../../hub/contract/views.js';

export default class HubTokenList extends BaseCommand<typeof HubTokenList> {
  static override summary = 'List the hub tokens: id, state, uses left, expiry and label limit (never the secret).';
  static override examples = ['<%= config.bin %> hub token list', '<%= config.bin %> hub token list --json'];
  static override flags = { ...hubConfigFlags };

  async run(): Promise<{ tokens: HubTokenView[] }> {
    const tokens = await new HubClient(loadHubConfig(this.flags['hub-config'])).listTokens();
    this.log(renderTokenTable(tokens));
    return { tokens };
  }
}
