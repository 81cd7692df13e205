import { Args } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { HubClient, type HeldClusterView } from '../../../hub-client/hub-client.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';

export default class HubClustersRelease extends BaseCommand<typeof HubClustersRelease> {
  static override summary = "Release a cluster's hold: rollouts change it again (hub admins only).";
  static override examples = ['<%= config.bin %> hub clusters release store-042'];
  static override args = { name: Args.string({ required: true, description: 'Cluster name.' }) };
  static override flags = { ...hubConfigFlags };

  async run(): Promise<HeldClusterView> {
    const cluster = await new HubClient(loadHubConfig(this.flags['hub-config'])).releaseCluster(this.args.name);
    this.log(`cluster ${cluster.name} released`);
    return cluster;
  }
}
