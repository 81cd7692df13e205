import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { outputFlags } from '../../cli/flags/output-flag.js';
import { hostConnectOptionsFromFlags, sshFlags } from '../../cli/flags/ssh-flags.js';
import { trustedKeyFlags } from '../../cli/package-trust-flags.js';
import { upgradeNode, upgradeNodePhases, type UpgradeNodeResult } from '../../cluster/upgrade/node.js';
import { parseUpgradeNodeRequest } from '../../cluster/upgrade/node-request.js';
import { requestedServiceManager } from '../../hosts/service-manager.js';
import { describePhases } from '../../workflow/phase.js';

export default class UpgradeNode extends BaseCommand<typeof UpgradeNode> {
  static override summary = 'Upgrade one node from a new install package: cordon, drain, swap, restart, uncordon.';
  static override description =
    `Phases:\n\n${describePhases(upgradeNodePhases())}\n\n` +
    'The cluster is read, and the node cordoned and drained, through --control-plane (its admin kubeconfig). ' +
    'A kubelet newer than an API server is refused (E_UPGRADE_SKEW). The drain evicts through the eviction API; ' +
    'DaemonSet and static Pods stay; a bare Pod, a Pod with emptyDir data, or a PodDisruptionBudget that still ' +
    'refuses at --drain-timeout stops it (E_DRAIN_*) unless --force. If the node is not Ready at the new version ' +
    'within --gate-timeout, the backed-up binaries are restored and the node uncordoned (E_UPGRADE_ROLLED_BACK). ' +
    'Edge nodes also get the new edgeadm for their edge-proxy (its cache is kept) and, on kubeadm, their node tunnel agent, both restarted on it. A re-run finishes an interrupted upgrade.';
  static override examples = [
    '<%= config.bin %> upgrade node --host root@10.1.0.7 --control-plane root@10.0.0.10 --install-pkg-path ./edge-k3s-v1.32.1+k3s1-amd64.tar.gz',
    '<%= config.bin %> upgrade node --host root@10.1.0.7 --control-plane root@10.0.0.10 --install-pkg-path ./edge-kubeadm-v1.32.1-amd64.tar.gz --drain-timeout 10m --force',
  ];
  static override flags = {
    ...sshFlags,
    ...outputFlags,
    'control-plane': Flags.string({
      summary: 'A control plane of the cluster (user@host[:port]), reached with the same SSH settings.',
    }),
    'install-pkg-path': Flags.string({ summary: 'The new install package (a .tar.gz file or an http(s) URL).' }),
    ...trustedKeyFlags,
    force: Flags.boolean({
      summary: 'Evict bare Pods and Pods with emptyDir data, and delete Pods past their PodDisruptionBudget.',
    }),
    'drain-timeout': Flags.string({ summary: 'How long the drain may take (default 5m).' }),
    'gate-timeout': Flags.string({
      summary: 'How long the node may take to be Ready before the rollback (default 5m).',
    }),
  };

  async run(): Promise<UpgradeNodeResult> {
    const { flags } = this;
    const context = { env: process.env, redactor: this.redactor, logger: this.logger };
    const request = parseUpgradeNodeRequest({
      connect: hostConnectOptionsFromFlags(flags, context),
      controlPlane:
        flags['control-plane'] === undefined
          ? undefined
          : hostConnectOptionsFromFlags({ ...flags, host: flags['control-plane'] }, context),
      installPkgPath: flags['install-pkg-path'],
      trustedKeys: flags['trusted-key'],
      isForced: flags.force,
      drainTimeout: flags['drain-timeout'],
      gateTimeout: flags['gate-timeout'],
    });
    const result = await upgradeNode(request, {
      requestedServiceManager: requestedServiceManager(process.env),
      ...this.workflowOutput,
    });
    if (!this.jsonEnabled()) {
      this.log(
        result.outcome === 'already-done'
          ? `${result.nodeName} already runs ${result.to}: nothing to do.`
          : `${result.nodeName} upgraded from ${result.from} to ${result.to}; the backup of ${result.from} is in ${result.backupDir}.`,
      );
    }
    return result;
  }
}
