import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { runAutonomyController } from '../../edge/autonomy-controller.js';
import { AUTONOMY_CONTROLLER_INTERVAL } from '../../edge/limits.js';
import { ValidationError } from '../../errors.js';
import { KubeClient } from '../../kube/client.js';
import { readKubeconfigFile } from '../../kube/kubeconfig.js';
import { serviceLogger, stopSignal } from '../../log/service-logger.js';
import { parseGoDuration } from '../../trust/duration.js';

export default class AgentAutonomy extends BaseCommand<typeof AgentAutonomy> {
  static override summary =
    "Run the autonomy controller: pods on edge nodes tolerate their node being cut off for the node's autonomy duration.";
  static override description = `Installed on the control plane by "edgeadm init --enable-edge". Every --interval it sets the tolerationSeconds of the node.kubernetes.io/unreachable and not-ready NoExecute tolerations of each pod bound to an edge node (label edgeadm.io/edge=true) to the node's edgeadm.io/autonomy-duration annotation (0: no limit). Runs until SIGTERM or SIGINT.`;
  static override examples = ['<%= config.bin %> agent autonomy --kubeconfig /etc/rancher/k3s/k3s.yaml'];
  static override flags = {
    kubeconfig: Flags.string({
      summary: 'Kubeconfig of the API server, with rights to list nodes and patch pods.',
      required: true,
    }),
    server: Flags.string({
      summary: "The API server's URL, instead of the kubeconfig's (whose CA and credentials are kept).",
    }),
    interval: Flags.string({
      summary:
        'How often the pods are checked (Go duration): a pod bound to an edge node gets its tolerations within this.',
      default: AUTONOMY_CONTROLLER_INTERVAL,
    }),
  };

  async run(): Promise<{ kubeconfig: string }> {
    const intervalMs = parseGoDuration(this.flags.interval);
    if (intervalMs <= 0) throw new ValidationError('--interval must be positive', { code: 'E_DURATION_INVALID' });
    const logger = serviceLogger({ logger: this.logger, redactor: this.redactor, isVerbose: this.flags.verbose });
    const credentials = await readKubeconfigFile(this.flags.kubeconfig);
    const client = new KubeClient({ ...credentials, ...(this.flags.server ? { server: this.flags.server } : {}) });
    logger.info(`autonomy controller watching edge nodes at ${client.server} every ${this.flags.interval}`);
    await runAutonomyController({ client, intervalMs, signal: stopSignal(), log: (line) => logger.info(line) });
    return { kubeconfig: this.flags.kubeconfig };
  }
}
