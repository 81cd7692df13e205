import { Flags } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { renderClusterTable } from '../../../hub-client/cluster-table.js';
import type { ClusterView } from '../../../hub/contract/views.js';

export default class HubClustersList extends BaseCommand<typeof HubClustersList> {
  static override summary = 'List the clusters registered with the hub.';
  static override examples = ['<%= config.bin %> hub clusters list --selector env=prod --json'];
  static override flags = {
    ...hubConfigFlags,
    selector: Flags.string({ char: 'l', summary: 'Only clusters whose labels match (k=v,k2!=v2).' }),
  };

  async run(): Promise<{ clusters: ClusterView[] }> {
    const clusters = await new HubClient(loadHubConfig(this.flags['hub-config'])).listClusters(this.flags.selector);
    this.log(renderClusterTable(clusters));
    return { clusters };
  }
}
