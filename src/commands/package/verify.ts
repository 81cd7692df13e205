import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { trustedKeyFlags } from '../../cli/package-trust-flags.js';
import { formatMiB, summarizePackage, type PackageSummary } from '../../packages/inspect.js';
import { loadPackageTrust } from '../../packages/package-trust.js';
import { uncheckedOriginWarning } from '../../packages/signature.js';
import { verifyPackage } from '../../packages/verify.js';
import { counted } from '../../log/counted.js';

/** The `--json` document of `package verify`: the summary without the file list. */
export type VerifyReport = Omit<PackageSummary, 'files'> & { verified: true; manifestSha256: string };

/** `edgeadm package verify FILE`: {@link verifyPackage}, and its verdict printed. */
export default class PackageVerify extends BaseCommand<typeof PackageVerify> {
  static override summary = 'Verify an install package: signature, manifest, checksums and safe paths.';
  static override description = [
    'Reads the package once, writing nothing, and refuses it (exit 3, naming the entry) for: a missing,',
    'malformed or not-first manifest.json; a checksum, size or mode mismatch; a file not listed or listed but',
    'absent; absolute paths or ".." components; any symbolic or hard link; devices and FIFOs; duplicate entries;',
    'sizes or entry counts over the limits; a truncated or damaged gzip/tar stream.',
    'With --trusted-key it also refuses a package that is unsigned, signed by any other key, or whose manifest',
    'changed after signing. Without one, it warns that the origin of the package is not checked.',
  ].join(' ');
  static override examples = [
    '<%= config.bin %> package verify pkg.tar.gz --trusted-key edgeadm-signing.pub',
    '<%= config.bin %> package verify pkg.tar.gz --trusted-key old.pub --trusted-key new.pub --json',
    '<%= config.bin %> package verify pkg.tar.gz',
  ];
  static override args = {
    file: Args.string({ description: 'The package file (.tar.gz).', required: true }),
  };
  static override flags = { ...trustedKeyFlags };

  async run(): Promise<VerifyReport> {
    const trust = loadPackageTrust(this.flags['trusted-key']);
    const verified = await verifyPackage(this.args.file, { trust });
    const { files: _files, ...summary } = summarizePackage(verified);
    this.logger.info(`verified ${verified.file}: sha256 ${verified.archiveSha256}`);
    const warning = uncheckedOriginWarning(summary.name, verified.signer);
    if (warning !== undefined) this.warnAlways(warning);
    this.log(
      `package ${summary.name} verified: ${counted(summary.fileCount, 'file')}, ${formatMiB(summary.totalBytes)} ` +
        `(${summary.file}, sha256 ${summary.archiveSha256})` +
        (verified.signer.isChecked ? `; signed by ${verified.signer.fingerprint}` : ''),
    );
    return { verified: true, ...summary, manifestSha256: verified.manifestSha256 };
  }
}
