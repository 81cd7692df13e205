import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { renderHostCheck } from '../../cli/render-host-check.js';
import { hostConnectOptionsFromFlags, sshFlags } from '../../cli/flags/ssh-flags.js';
import { ExitCode } from '../../errors.js';
import { connectHost } from '../../hosts/connect.js';
import { checkClusterHost } from '../../cluster/installed-host-check.js';
import type { HostCheckReport } from '../../hosts/host-check.js';

export default class HostCheck extends BaseCommand<typeof HostCheck> {
  static override summary = 'Print the facts and preflight results of a host.';
  static override description =
    'Checks CPUs, memory, swap, the ports Kubernetes needs, kernel modules and sysctls, time sync, disk space ' +
    'and (with --arch) the architecture. Each check passes, warns or fails with a reason; the exit code is 2 when any fails.';
  static override examples = [
    '<%= config.bin %> host check',
    '<%= config.bin %> host check --host root@10.0.0.10 --ssh-jump ops@bastion.example.com --json',
    '<%= config.bin %> host check --host admin@10.0.0.11 --sudo-password-file ./sudo.pw --role worker --arch arm64',
  ];
  static override flags = {
    ...sshFlags,
    role: Flags.option({ options: ['control-plane', 'worker'] as const, default: 'control-plane' })({
      summary: 'The role the host is checked for.',
    }),
    arch: Flags.string({ summary: "Expected architecture (the install package's): amd64, arm64, …" }),
  };

  async run(): Promise<HostCheckReport> {
    const options = hostConnectOptionsFromFlags(this.flags, {
      env: process.env,
      redactor: this.redactor,
      logger: this.logger,
    });
    const host = await connectHost(options);
    let report: HostCheckReport;
    try {
      report = await checkClusterHost(host, {
        role: this.flags.role,
        ...(this.flags.arch ? { expectedArch: this.flags.arch } : {}),
      });
    } finally {
      await host.close();
    }
    if (!this.jsonEnabled()) for (const line of renderHostCheck(report, this.style)) this.log(line);
    // The report is the output either way; the exit status tells scripts whether the host is fit.
    if (!report.isFit) process.exitCode = ExitCode.Preflight;
    return report;
  }
}
