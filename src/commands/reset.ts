import { Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { outputFlags } from '../cli/flags/output-flag.js';
import { hostConnectOptionsFromFlags, sshFlags } from '../cli/flags/ssh-flags.js';
import { afterReset, resetHost, resetPhases, type ResetResult } from '../cluster/reset.js';
import { parseResetRequest } from '../cluster/reset-request.js';
import { requestedServiceManager } from '../hosts/service-manager.js';
import { describePhases } from '../workflow/phase.js';
import { dryRunFlag, skipPhasesFlag } from '../cli/flags/run-flags.js';

export default class Reset extends BaseCommand<typeof Reset> {
  static override summary =
    'Undo init or join: stop services and remove everything edgeadm and the distribution wrote.';
  static override description = `Phases:\n\n${describePhases(resetPhases())}\n\nWhat goes is what init and join recorded in /var/lib/edgeadm/state. Without a terminal to confirm on, --force is required.`;
  static override examples = [
    '<%= config.bin %> reset --dry-run',
    '<%= config.bin %> reset --host root@10.0.0.10 --force',
  ];
  static override flags = {
    ...sshFlags,
    ...outputFlags,
    force: Flags.boolean({
      summary: 'Reset without asking (and without an install state, remove what the distribution is known to write).',
    }),
    'dry-run': dryRunFlag('List what would be stopped and removed; change nothing.'),
    'skip-phases': skipPhasesFlag,
    distribution: Flags.string({
      summary: 'k3s or kubeadm; default: the one the install state names (else k3s).',
    }),
  };

  async run(): Promise<ResetResult> {
    const { flags } = this;
    const request = parseResetRequest(flags);
    const result = await resetHost(request, {
      connect: hostConnectOptionsFromFlags(flags, { env: process.env, redactor: this.redactor, logger: this.logger }),
      requestedServiceManager: requestedServiceManager(process.env),
      ...this.workflowOutput,
    });
    if (!this.jsonEnabled()) {
      this.log(result.isDryRun ? `Dry run: nothing was changed on ${result.host}.` : `${result.host} is reset.`);
      for (const line of afterReset(result)) this.log(line);
    }
    return result;
  }
}
