import { Args } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';

export default class HubClustersDelete extends BaseCommand<typeof HubClustersDelete> {
  static override summary = 'Delete a cluster: revoke its certificate and close its tunnel.';
  static override examples = ['<%= config.bin %> hub clusters delete store-042'];
  static override args = { name: Args.string({ required: true, description: 'Cluster name.' }) };
  static override flags = { ...hubConfigFlags };

  async run(): Promise<{ name: string; isDeleted: boolean }> {
    const result = await new HubClient(loadHubConfig(this.flags['hub-config'])).deleteCluster(this.args.name);
    this.log(`cluster ${result.name} deleted: its certificate is revoked and its tunnel closed`);
    return result;
  }
}
