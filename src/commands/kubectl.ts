import { Errors } from '@oclif/core';
import { BaseCommand, baseFlagsWithoutJson } from '../cli/base-command.js';
import { renderClusterKubeconfig } from '../hub-client/cluster-kubeconfig.js';
import { loadHubConfig } from '../hub/contract/hub-config.js';
import { hubClusterFlags, hubConfigFlags } from '../cli/flags/hub-flags.js';
import { runKubectlThroughHub } from '../hub-client/kubectl-runner.js';
import { assertClusterReachable } from '../hub-client/cluster-probe.js';
import { isClusterName } from '../kube/names.js';
import { ValidationError } from '../errors.js';

export default class Kubectl extends BaseCommand<typeof Kubectl> {
  static override summary = 'Run kubectl against a registered cluster through the hub.';
  static override description =
    'Everything after -- goes to the kubectl found on PATH; its streams and exit code pass through.';
  static override examples = [
    '<%= config.bin %> kubectl --cluster store-042 -- get pods -A',
    '<%= config.bin %> kubectl --cluster store-042 -- exec -it web-0 -- sh',
  ];
  static override strict = false;
  static override enableJsonFlag = false;
  static override baseFlags = baseFlagsWithoutJson;
  static override flags = {
    ...hubConfigFlags,
    ...hubClusterFlags,
  };

  async run(): Promise<void> {
    if (!isClusterName(this.flags.cluster)) {
      throw new ValidationError(`invalid cluster name ${JSON.stringify(this.flags.cluster)}`, {
        code: 'E_HUB_CLUSTER_NAME',
      });
    }
    const separator = this.argv.indexOf('--');
    const args = separator === -1 ? [] : this.argv.slice(separator + 1);
    if (args.length === 0) {
      throw new ValidationError('give the kubectl arguments after --', {
        code: 'E_KUBECTL_ARGS',
        hints: ['For example: edgeadm kubectl --cluster store-042 -- get pods -A'],
      });
    }
    const hubConfig = loadHubConfig(this.flags['hub-config']);
    await assertClusterReachable(hubConfig, this.flags.cluster);
    const kubeconfig = renderClusterKubeconfig(hubConfig, this.flags.cluster);
    const exitCode = await runKubectlThroughHub({ kubeconfig, args });
    if (exitCode !== 0) throw new Errors.ExitError(exitCode);
  }
}
