import { Args } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';
import type { DeleteResult } from '../../../rollout/api.js';

export default class HubRolloutDelete extends BaseCommand<typeof HubRolloutDelete> {
  static override summary = 'Delete a rollout and remove its objects from every cluster it reached.';
  static override description =
    'Clusters offline now lose the objects when they return. Only objects the rollout created are removed.';
  static override examples = ['<%= config.bin %> hub rollout delete web'];
  static override args = { name: Args.string({ required: true, description: 'Rollout name.' }) };
  static override flags = { ...hubConfigFlags };

  async run(): Promise<DeleteResult> {
    const result = await new HubClient(loadHubConfig(this.flags['hub-config'])).deleteRollout(this.args.name);
    const clusters = (n: number): string => `${n} cluster${n === 1 ? '' : 's'}`;
    this.log(`rollout ${result.name} deleted: its objects were removed from ${clusters(result.removed.length)}`);
    if (result.pendingRemovals.length > 0) {
      this.log(
        `offline now, their objects are removed when they return (${clusters(result.pendingRemovals.length)}): ${result.pendingRemovals.join(', ')}`,
      );
    }
    return result;
  }
}
