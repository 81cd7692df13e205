import { Args } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { renderRolloutLine } from '../../../hub-client/rollout-table.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';
import type { RolloutStatusView } from '../../../rollout/api.js';

export default class HubRolloutUndo extends BaseCommand<typeof HubRolloutUndo> {
  static override summary = "Roll back to the previous revision's document, delivered as a new revision in waves.";
  static override examples = ['<%= config.bin %> hub rollout undo web'];
  static override args = { name: Args.string({ required: true, description: 'Rollout name.' }) };
  static override flags = { ...hubConfigFlags };

  async run(): Promise<RolloutStatusView> {
    const view = await new HubClient(loadHubConfig(this.flags['hub-config'])).undoRollout(this.args.name);
    this.log(renderRolloutLine(view));
    return view;
  }
}
