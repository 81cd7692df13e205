import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { outputFlags } from '../../cli/flags/output-flag.js';
import { hostConnectOptionsFromFlags, sshFlags } from '../../cli/flags/ssh-flags.js';
import { trustedKeyFlags } from '../../cli/package-trust-flags.js';
import { applyUpgrade, upgradeApplyPhases, type UpgradeApplyResult } from '../../cluster/upgrade/apply.js';
import { parseUpgradeApplyRequest } from '../../cluster/upgrade/apply-request.js';
import { requestedServiceManager } from '../../hosts/service-manager.js';
import { describePhases } from '../../workflow/phase.js';
import { dryRunFlag } from '../../cli/flags/run-flags.js';

export default class UpgradeApply extends BaseCommand<typeof UpgradeApply> {
  static override summary =
    'Upgrade one control plane (k3s or kubeadm) from a new install package, with a backup and rollback.';
  static override description =
    `Phases (k3s):\n\n${describePhases(upgradeApplyPhases('k3s'))}\n\n` +
    `Phases (kubeadm):\n\n${describePhases(upgradeApplyPhases('kubeadm'))}\n\n` +
    'The version skew policy is checked first; a refusal changes nothing. If a health gate fails within ' +
    '--gate-timeout, the backed-up binaries, configuration and datastore are restored and the old version is started ' +
    'again (E_UPGRADE_ROLLED_BACK). A re-run after an interruption finishes the upgrade or the rollback.';
  static override examples = [
    '<%= config.bin %> upgrade apply --host root@10.0.0.10 --install-pkg-path ./edge-k3s-v1.32.1+k3s1-amd64.tar.gz --dry-run',
    '<%= config.bin %> upgrade apply --host root@10.0.0.10 --install-pkg-path ./edge-k3s-v1.32.1+k3s1-amd64.tar.gz',
  ];
  static override flags = {
    ...sshFlags,
    ...outputFlags,
    'install-pkg-path': Flags.string({ summary: 'The new install package (a .tar.gz file or an http(s) URL).' }),
    ...trustedKeyFlags,
    'dry-run': dryRunFlag('Print what would be done; change nothing.'),
    'gate-timeout': Flags.string({ summary: 'How long each health gate may take before the rollback (default 5m).' }),
  };

  async run(): Promise<UpgradeApplyResult> {
    const { flags } = this;
    const request = parseUpgradeApplyRequest({
      connect: hostConnectOptionsFromFlags(flags, { env: process.env, redactor: this.redactor, logger: this.logger }),
      installPkgPath: flags['install-pkg-path'],
      trustedKeys: flags['trusted-key'],
      isDryRun: flags['dry-run'],
      gateTimeout: flags['gate-timeout'],
    });
    const result = await applyUpgrade(request, {
      requestedServiceManager: requestedServiceManager(process.env),
      ...this.workflowOutput,
    });
    if (!this.jsonEnabled()) {
      this.log(
        result.outcome === 'already-done'
          ? `${result.host} already runs ${result.to}: nothing to do.`
          : result.outcome === 'would-upgrade'
            ? `Dry run: nothing was changed on ${result.host}.`
            : `${result.host} upgraded from ${result.from} to ${result.to}; the backup of ${result.from} is in ${result.backupDir}.`,
      );
    }
    return result;
  }
}
