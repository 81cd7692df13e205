import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/hub-flags.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { renderRolloutList } from '../../../hub-client/rollout-table.js';
import { loadHubConfig } from '../../../hub/hub-config.js';
import type { RolloutListItem } from '../../../rollout/api.js';

export default class HubRolloutList extends BaseCommand<typeof HubRolloutList> {
  static override summary = 'List the rollouts you can see, with their revision, state and counts.';
  static override examples = ['<%= config.bin %> hub rollout list', '<%= config.bin %> hub rollout list --json'];
  static override flags = { ...hubConfigFlags };

  async run(): Promise<{ rollouts: RolloutListItem[] }> {
    const rollouts = await new HubClient(loadHubConfig(this.flags['hub-config'])).listRollouts();
    this.log(renderRolloutList(rollouts));
    return { rollouts };
  }
}
