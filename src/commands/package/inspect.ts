import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { formatPackageSummary, inspectPackage, type PackageSummary } from '../../packages/inspect.js';

/** `edgeadm package inspect FILE`: {@link inspectPackage}, and the summary printed. */
export default class PackageInspect extends BaseCommand<typeof PackageInspect> {
  static override summary = 'Show what an install package holds.';
  static override description =
    'Verifies the package first (exactly as "package verify" does), then prints its name, distribution, ' +
    'Kubernetes version, arch, creation time, size and a table of its files.';
  static override examples = [
    '<%= config.bin %> package inspect pkg.tar.gz',
    '<%= config.bin %> package inspect pkg.tar.gz --json',
  ];
  static override args = {
    file: Args.string({ description: 'The package file (.tar.gz).', required: true }),
  };

  async run(): Promise<PackageSummary> {
    const summary = await inspectPackage(this.args.file);
    this.log(formatPackageSummary(summary));
    return summary;
  }
}
