import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { HubClient, type HeldClusterView } from '../../../hub-client/hub-client.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';

export default class HubClustersHold extends BaseCommand<typeof HubClustersHold> {
  static override summary = 'Hold a cluster: no rollout changes it until it is released (hub admins only).';
  static override description =
    'For maintenance windows or opening hours. Rollouts show the cluster as held, and a hold never counts as a ' +
    'failure; a wave does not wait for a held cluster. Release it with "hub clusters release".';
  static override examples = ['<%= config.bin %> hub clusters hold store-042 --reason "opening hours until 20:00"'];
  static override args = { name: Args.string({ required: true, description: 'Cluster name.' }) };
  static override flags = {
    ...hubConfigFlags,
    reason: Flags.string({ required: true, summary: 'Why, shown with the cluster and in rollout status.' }),
  };

  async run(): Promise<HeldClusterView> {
    const client = new HubClient(loadHubConfig(this.flags['hub-config']));
    const cluster = await client.holdCluster(this.args.name, this.flags.reason);
    this.log(`cluster ${cluster.name} held: ${cluster.hold?.reason ?? this.flags.reason}`);
    return cluster;
  }
}
