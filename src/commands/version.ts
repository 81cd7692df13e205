import { BaseCommand } from '../cli/base-command.js';
import { versionReport, type VersionReport } from '../version.js';

export default class Version extends BaseCommand<typeof Version> {
  static override summary = 'Print the edgeadm version, git commit, Node.js version and platform.';
  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version --json'];

  async run(): Promise<VersionReport> {
    const report = versionReport();
    this.log(
      `edgeadm version ${report.version} (commit ${report.commit}, node ${report.node}, ${report.platform}/${report.arch})`,
    );
    return report;
  }
}
