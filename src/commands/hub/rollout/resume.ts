import { Args } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { renderRolloutLine } from '../../../hub-client/rollout-table.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';
import type { RolloutStatusView } from '../../../rollout/api.js';

export default class HubRolloutResume extends BaseCommand<typeof HubRolloutResume> {
  static override summary = 'Resume a paused or halted rollout where it stopped.';
  static override description =
    'A paused rollout goes on where it stopped. A halted one (more clusters failed than its failure budget) goes on ' +
    'too, and its failed clusters are sent their copy again: resume it once what made them fail is fixed.';
  static override examples = ['<%= config.bin %> hub rollout resume web'];
  static override args = { name: Args.string({ required: true, description: 'Rollout name.' }) };
  static override flags = { ...hubConfigFlags };

  async run(): Promise<RolloutStatusView> {
    const view = await new HubClient(loadHubConfig(this.flags['hub-config'])).resumeRollout(this.args.name);
    this.log(renderRolloutLine(view));
    return view;
  }
}
