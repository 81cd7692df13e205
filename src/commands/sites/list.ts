import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { clientFromKubeconfig, defaultKubeconfigPath } from '../../cluster/tokens.js';
import { listSites, type SiteListing } from '../../sites/site-list.js';

export default class SitesList extends BaseCommand<typeof SitesList> {
  static override summary =
    'List the sites of the cluster (nodes labelled edgeadm.io/site), their nodes and readiness.';
  static override description =
    'A site is the set of Nodes labelled edgeadm.io/site=NAME ("edgeadm join --site NAME" sets it). Nodes without the label are counted apart.';
  static override examples = [
    '<%= config.bin %> sites list',
    '<%= config.bin %> sites list --json',
    '<%= config.bin %> sites list --kubeconfig /etc/kubernetes/admin.conf',
  ];
  static override flags = {
    kubeconfig: Flags.string({ summary: 'Admin kubeconfig. Default: $KUBECONFIG or ~/.kube/config.' }),
    context: Flags.string({ summary: 'Kubeconfig context to use. Default: the current one.' }),
  };

  async run(): Promise<SiteListing> {
    const client = await clientFromKubeconfig(this.flags.kubeconfig ?? defaultKubeconfigPath(), this.flags.context);
    const listing = await listSites(client);
    if (!this.jsonEnabled()) {
      this.log(['SITE', 'READY', 'NODES'].join('\t'));
      for (const site of listing.sites) {
        const nodes = site.nodes.map((node) => `${node.name}${node.isReady ? '' : ' (NotReady)'}`).join(', ');
        this.log([site.name, `${site.readyNodes}/${site.nodes.length}`, nodes].join('\t'));
      }
      if (listing.nodesWithoutSite.length > 0) {
        this.log(`\nwithout a site: ${listing.nodesWithoutSite.join(', ')}`);
      }
    }
    return listing;
  }
}
