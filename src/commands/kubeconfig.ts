import { BaseCommand } from '../cli/base-command.js';
import { renderClusterKubeconfig } from '../hub-client/cluster-kubeconfig.js';
import { loadHubConfig } from '../hub/contract/hub-config.js';
import { hubClusterFlags, hubConfigFlags } from '../cli/flags/hub-flags.js';
import { isClusterName } from '../kube/names.js';
import { ValidationError } from '../errors.js';

export default class Kubeconfig extends BaseCommand<typeof Kubeconfig> {
  static override summary = 'Print a kubeconfig that reaches a registered cluster through the hub.';
  static override description =
    'The kubeconfig holds your hub token: keep it private (redirect it to a file with mode 0600).';
  static override examples = ['<%= config.bin %> kubeconfig --cluster store-042 > store-042.yaml'];
  static override flags = {
    ...hubConfigFlags,
    ...hubClusterFlags,
  };

  async run(): Promise<{ cluster: string; kubeconfig: string }> {
    if (!isClusterName(this.flags.cluster)) {
      throw new ValidationError(`invalid cluster name ${JSON.stringify(this.flags.cluster)}`, {
        code: 'E_HUB_CLUSTER_NAME',
      });
    }
    const kubeconfig = renderClusterKubeconfig(loadHubConfig(this.flags['hub-config']), this.flags.cluster);
    if (!this.jsonEnabled()) process.stdout.write(kubeconfig);
    return { cluster: this.flags.cluster, kubeconfig };
  }
}
