import { Flags } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { HubClient, type AttentionList } from '../../../hub-client/hub-client.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { renderClusterTable } from '../../../hub-client/cluster-table.js';
import { renderAttentionList } from '../../../hub-client/attention-table.js';
import { ATTENTION_REASON_KINDS, ATTENTION_SORT_KEYS } from '../../../hub/contract/attention.js';
import type { ClusterView } from '../../../hub/contract/views.js';
import { parseGoDuration } from '../../../trust/duration.js';

export default class HubClustersList extends BaseCommand<typeof HubClustersList> {
  static override summary = 'List the clusters registered with the hub; --attention: those that need someone now.';
  static override description =
    'LAST SEEN is how long ago a disconnected cluster was last connected ("connected" while it is); --json keeps ' +
    'the ISO times. With --attention, only the clusters that need attention, most severe first, each with its ' +
    'reasons: offline (disconnected, for at least --offline-for), a halted rollout that places it, nodes not Ready, ' +
    'a certificate expiring within --certs-within days (its agent’s own hub certificate once its renewal is ' +
    'overdue), held. Any hub user may ask it, for the clusters their selector reaches; --json prints the whole list ' +
    'as GET /hub/v1/attention answers it (rows, counts per reason, halted rollouts, the thresholds).';
  static override examples = [
    '<%= config.bin %> hub clusters list --selector env=prod --json',
    '<%= config.bin %> hub clusters list --attention',
    '<%= config.bin %> hub clusters list --attention --offline-for 10m --certs-within 14 --json',
  ];
  static override flags = {
    ...hubConfigFlags,
    selector: Flags.string({ char: 'l', summary: 'Only clusters whose labels match (k=v,k2!=v2).' }),
    attention: Flags.boolean({ summary: 'Only the clusters that need attention now, with a REASONS column.' }),
    'offline-for': Flags.string({
      summary: 'With --attention: count a disconnected cluster offline after this long (Go duration; default 0s).',
      dependsOn: ['attention'],
    }),
    'certs-within': Flags.integer({
      summary: 'With --attention: count certificates expiring within this many days (default 30).',
      min: 0,
      dependsOn: ['attention'],
    }),
    reason: Flags.string({
      summary: 'With --attention: only the clusters with this reason.',
      options: [...ATTENTION_REASON_KINDS],
      dependsOn: ['attention'],
    }),
    sort: Flags.string({
      summary: 'With --attention: the order (default severity: the most severe first).',
      options: [...ATTENTION_SORT_KEYS],
      dependsOn: ['attention'],
    }),
  };

  async run(): Promise<{ clusters: ClusterView[] } | AttentionList> {
    const client = new HubClient(loadHubConfig(this.flags['hub-config']));
    const { flags } = this;
    if (flags.attention) {
      const offlineFor = flags['offline-for'];
      const list = await client.listAttention({
        selector: flags.selector,
        reason: ATTENTION_REASON_KINDS.find((kind) => kind === flags.reason),
        sort: ATTENTION_SORT_KEYS.find((key) => key === flags.sort),
        offlineForSeconds: offlineFor === undefined ? undefined : Math.ceil(parseGoDuration(offlineFor) / 1000),
        certsWithinDays: flags['certs-within'],
      });
      this.log(renderAttentionList(list));
      return list;
    }
    const clusters = await client.listClusters(flags.selector);
    this.log(renderClusterTable(clusters, Date.now()));
    return { clusters };
  }
}
