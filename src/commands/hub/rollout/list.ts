import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { renderQuarantined, renderRolloutList } from '../../../hub-client/rollout-table.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';
import type { QuarantinedRollout, RolloutListItem } from '../../../rollout/api.js';

export default class HubRolloutList extends BaseCommand<typeof HubRolloutList> {
  static override summary = 'List the rollouts you can see, with their revision, state and counts.';
  static override description =
    'Rollouts the hub could not load at its start (a stored document past its limits, or one that no longer ' +
    'parses) are listed apart as quarantined, with the reason: delete them and apply a fixed document.';
  static override examples = ['<%= config.bin %> hub rollout list', '<%= config.bin %> hub rollout list --json'];
  static override flags = { ...hubConfigFlags };

  async run(): Promise<{ rollouts: RolloutListItem[]; quarantined: QuarantinedRollout[] }> {
    const listed = await new HubClient(loadHubConfig(this.flags['hub-config'])).listRolloutsWithQuarantine();
    this.log(renderRolloutList(listed.rollouts));
    if (listed.quarantined.length > 0) this.log(renderQuarantined(listed.quarantined));
    return listed;
  }
}
