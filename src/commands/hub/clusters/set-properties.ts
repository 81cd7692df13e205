import { Args } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { parsePropertyAssignments } from '../../../hub-client/cluster-properties.js';
import { HubClient, type HeldClusterView } from '../../../hub-client/hub-client.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';

export default class HubClustersSetProperties extends BaseCommand<typeof HubClustersSetProperties> {
  static override summary = "Set a cluster's properties, which rollouts read as ${property:KEY} (hub admins only).";
  static override description =
    "The given KEY=VALUE pairs become the cluster's properties (they replace the previous set). Unlike labels, " +
    'properties do not place rollouts: they are values for customization, such as an image tag or a site code.';
  static override examples = ['<%= config.bin %> hub clusters set-properties store-042 tag=1.4.3 site-code=HH-042'];
  static override strict = false;
  static override args = {
    name: Args.string({ required: true, description: 'Cluster name.' }),
    properties: Args.string({ required: true, description: 'KEY=VALUE, one or more.' }),
  };
  static override flags = { ...hubConfigFlags };

  async run(): Promise<HeldClusterView> {
    // Every argument after NAME (strict = false): oclif hands the rest over as argv.
    const { argv } = await this.parse(HubClustersSetProperties);
    const properties = parsePropertyAssignments(argv.slice(1).map(String));
    const client = new HubClient(loadHubConfig(this.flags['hub-config']));
    const cluster = await client.setClusterProperties(this.args.name, properties);
    const n = Object.keys(properties).length;
    this.log(`cluster ${cluster.name}: ${n} ${n === 1 ? 'property' : 'properties'} set`);
    return cluster;
  }
}
