import { Args } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { renderClusterTable } from '../../../hub-client/cluster-table.js';
import type { ClusterView } from '../../../hub/contract/views.js';

export default class HubClustersGet extends BaseCommand<typeof HubClustersGet> {
  static override summary = 'Show one registered cluster.';
  static override examples = ['<%= config.bin %> hub clusters get store-042 --json'];
  static override args = { name: Args.string({ required: true, description: 'Cluster name.' }) };
  static override flags = { ...hubConfigFlags };

  async run(): Promise<ClusterView> {
    const cluster = await new HubClient(loadHubConfig(this.flags['hub-config'])).getCluster(this.args.name);
    this.log(renderClusterTable([cluster], Date.now()));
    return cluster;
  }
}
