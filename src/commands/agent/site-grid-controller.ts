import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { ValidationError } from '../../errors.js';
import { KubeClient } from '../../kube/client.js';
import { readKubeconfigFile } from '../../kube/kubeconfig.js';
import { serviceLogger, stopSignal } from '../../log/service-logger.js';
import { runSiteGridController } from '../../sites/grid-controller.js';
import { parseGoDuration } from '../../trust/duration.js';

export default class AgentSiteGridController extends BaseCommand<typeof AgentSiteGridController> {
  static override summary = 'Run the site grid controller: one copy of each SiteGrid per site, pinned to its nodes.';
  static override description = `Installed on the control plane by "edgeadm init --enable-edge", as the service account edgeadm-site-grid-controller. Watches Nodes (label edgeadm.io/site), SiteGrids and the grids' workloads; on every change, and every --resync, it applies each selected site's workload and Service, deletes the copies of sites that have no node left, and writes each grid's per-site status. A site whose nodes are all NotReady keeps its copy untouched. Runs until SIGTERM or SIGINT.`;
  static override examples = [
    '<%= config.bin %> agent site-grid-controller --kubeconfig /etc/edgeadm/site-grid-controller/kubeconfig',
  ];
  static override flags = {
    kubeconfig: Flags.string({
      summary: 'Kubeconfig of the API server, with the rights of manifests/site-grid-controller.yaml.',
      required: true,
    }),
    server: Flags.string({
      summary: "The API server's URL, instead of the kubeconfig's (whose CA and credentials are kept).",
    }),
    resync: Flags.string({
      summary: 'The longest time between two passes whatever the watches report (Go duration).',
      default: '1m',
    }),
  };

  async run(): Promise<{ kubeconfig: string }> {
    const resyncMs = parseGoDuration(this.flags.resync);
    if (resyncMs <= 0) throw new ValidationError('--resync must be positive', { code: 'E_DURATION_INVALID' });
    const logger = serviceLogger({ logger: this.logger, redactor: this.redactor, isVerbose: this.flags.verbose });
    const credentials = await readKubeconfigFile(this.flags.kubeconfig);
    const client = new KubeClient({ ...credentials, ...(this.flags.server ? { server: this.flags.server } : {}) });
    logger.info(`site grid controller watching ${client.server}, resync every ${this.flags.resync}`);
    await runSiteGridController({ client, resyncMs, signal: stopSignal(), log: (line) => logger.info(line) });
    return { kubeconfig: this.flags.kubeconfig };
  }
}
