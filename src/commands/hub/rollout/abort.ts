import { Args } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { renderRolloutLine } from '../../../hub-client/rollout-table.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';
import type { RolloutStatusView } from '../../../rollout/api.js';

export default class HubRolloutAbort extends BaseCommand<typeof HubRolloutAbort> {
  static override summary =
    'Abort a rollout: nothing more is delivered; clusters keep what they have (undo or delete to change that).';
  static override examples = ['<%= config.bin %> hub rollout abort web'];
  static override args = { name: Args.string({ required: true, description: 'Rollout name.' }) };
  static override flags = { ...hubConfigFlags };

  async run(): Promise<RolloutStatusView> {
    const view = await new HubClient(loadHubConfig(this.flags['hub-config'])).abortRollout(this.args.name);
    this.log(renderRolloutLine(view));
    return view;
  }
}
