import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { formatMiB, summarizePackage, type PackageSummary } from '../../packages/inspect.js';
import { verifyPackage } from '../../packages/verify.js';
import { counted } from '../../log/counted.js';

/** The `--json` document of `package verify`: the summary without the file list. */
export type VerifyReport = Omit<PackageSummary, 'files'> & { verified: true; manifestSha256: string };

/** `edgeadm package verify FILE`: {@link verifyPackage}, and its verdict printed. */
export default class PackageVerify extends BaseCommand<typeof PackageVerify> {
  static override summary = 'Verify an install package: manifest, checksums and safe paths.';
  static override description = [
    'Reads the package once, writing nothing, and refuses it (exit 3, naming the entry) for: a missing,',
    'malformed or not-first manifest.json; a checksum, size or mode mismatch; a file not listed or listed but',
    'absent; absolute paths or ".." components; any symbolic or hard link; devices and FIFOs; duplicate entries;',
    'sizes or entry counts over the limits; a truncated or damaged gzip/tar stream.',
  ].join(' ');
  static override examples = [
    '<%= config.bin %> package verify pkg.tar.gz',
    '<%= config.bin %> package verify pkg.tar.gz --json',
  ];
  static override args = {
    file: Args.string({ description: 'The package file (.tar.gz).', required: true }),
  };

  async run(): Promise<VerifyReport> {
    const verified = await verifyPackage(this.args.file);
    const { files: _files, ...summary } = summarizePackage(verified);
    this.logger.info(`verified ${verified.file}: sha256 ${verified.archiveSha256}`);
    this.log(
      `package ${summary.name} verified: ${counted(summary.fileCount, 'file')}, ${formatMiB(summary.totalBytes)} ` +
        `(${summary.file}, sha256 ${summary.archiveSha256})`,
    );
    return { verified: true, ...summary, manifestSha256: verified.manifestSha256 };
  }
}
