import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { hostConnectOptionsFromFlags, sshFlags } from '../../cli/flags/ssh-flags.js';
import { trustedKeyFlags } from '../../cli/package-trust-flags.js';
import {
  formatUpgradePlan,
  parseUpgradePlanRequest,
  planUpgrade,
  type UpgradePlanResult,
} from '../../cluster/upgrade/plan.js';
import { SKEW_RULES } from '../../cluster/upgrade/skew.js';

export default class UpgradePlan extends BaseCommand<typeof UpgradePlan> {
  static override summary = 'Show what upgrading the cluster to a new install package would do, host by host.';
  static override description =
    'Reads the cluster through a control plane over SSH (its distribution, control planes, nodes, edge nodes and ' +
    "every host's version, with the control plane's admin kubeconfig) and the new package, and prints what " +
    '`upgrade apply` and `upgrade node` would do: control planes first, one at a time, then the nodes. It changes ' +
    'nothing. An upgrade the Kubernetes version skew policy forbids is refused (code E_UPGRADE_SKEW, exit code 2), ' +
    `naming the rule:\n\n${Object.entries(SKEW_RULES)
      .map(([name, text]) => `  ${name}: ${text}`)
      .join('\n')}`;
  static override examples = [
    '<%= config.bin %> upgrade plan --host root@10.0.0.10 --install-pkg-path ./edge-k3s-v1.32.1+k3s1-amd64.tar.gz',
    '<%= config.bin %> upgrade plan --host root@10.0.0.10 --ssh-jump ops@bastion.example.com --install-pkg-path https://files.example.com/edge-kubeadm-v1.32.1-amd64.tar.gz --json',
    '<%= config.bin %> upgrade plan --host root@10.0.0.10',
  ];
  static override flags = {
    ...sshFlags,
    ...trustedKeyFlags,
    'install-pkg-path': Flags.string({
      summary: 'The new install package (a .tar.gz file or an http(s) URL). Without it, only the cluster is shown.',
    }),
  };

  async run(): Promise<UpgradePlanResult> {
    const request = parseUpgradePlanRequest({
      connect: hostConnectOptionsFromFlags(this.flags, {
        env: process.env,
        redactor: this.redactor,
        logger: this.logger,
      }),
      installPkgPath: this.flags['install-pkg-path'],
      trustedKeys: this.flags['trusted-key'],
    });
    const result = await planUpgrade(request, { logger: this.logger, warn: (line) => this.warnAlways(line) });
    if (!this.jsonEnabled()) for (const line of formatUpgradePlan(result)) this.log(line);
    return result;
  }
}
