import { BaseCommand } from '../../../cli/base-command.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { renderReplicaTable } from '../../../hub-client/replica-table.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';
import type { ReplicaView } from '../../../hub/contract/views.js';

export default class HubReplicasList extends BaseCommand<typeof HubReplicasList> {
  static override summary = 'List the running hub replicas: address, tunnels held, which one leads.';
  static override description =
    'A hub on etcd may run as several replicas. Each holds the tunnels of the agents connected to it; one of them ' +
    'leads and runs the controllers that must run once (rollouts). A hub on SQLite is one replica.';
  static override examples = ['<%= config.bin %> hub replicas list', '<%= config.bin %> hub replicas list --json'];
  static override flags = { ...hubConfigFlags };

  async run(): Promise<{ replicas: ReplicaView[] }> {
    const replicas = await new HubClient(loadHubConfig(this.flags['hub-config'])).listReplicas();
    this.log(renderReplicaTable(replicas));
    return { replicas };
  }
}
