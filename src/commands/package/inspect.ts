import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { trustedKeyFlags } from '../../cli/package-trust-flags.js';
import { formatPackageSummary, inspectPackage, readPackageSbom, type PackageSummary } from '../../packages/inspect.js';
import { loadPackageTrust } from '../../packages/package-trust.js';
import { uncheckedOriginWarning } from '../../packages/signature.js';

/** `edgeadm package inspect FILE`: {@link inspectPackage}, and the summary (or with --sbom the SBOM) printed. */
export default class PackageInspect extends BaseCommand<typeof PackageInspect> {
  static override summary = 'Show what an install package holds, or its bill of materials (--sbom).';
  static override description =
    'Verifies the package first (exactly as "package verify" does, --trusted-key included), then prints its name, distribution, ' +
    'Kubernetes version, arch, creation time, signature, size and a table of its files. With --sbom it prints the ' +
    "package's CycloneDX bill of materials (sbom.cdx.json) as it is, a JSON document, instead.";
  static override examples = [
    '<%= config.bin %> package inspect pkg.tar.gz',
    '<%= config.bin %> package inspect pkg.tar.gz --json',
    '<%= config.bin %> package inspect pkg.tar.gz --sbom --trusted-key edgeadm-signing.pub > sbom.cdx.json',
  ];
  static override args = {
    file: Args.string({ description: 'The package file (.tar.gz).', required: true }),
  };
  static override flags = {
    sbom: Flags.boolean({ summary: "Print the package's bill of materials (CycloneDX JSON) instead of the summary." }),
    ...trustedKeyFlags,
  };

  async run(): Promise<PackageSummary | Record<string, unknown>> {
    const trust = loadPackageTrust(this.flags['trusted-key']);
    if (this.flags.sbom) {
      const { verified, sbom } = await readPackageSbom(this.args.file, { trust });
      const warning = uncheckedOriginWarning(verified.manifest.name, verified.signer);
      if (warning !== undefined) this.warnAlways(warning);
      // The document as the package carries it, byte for byte (its hash is in the signed manifest).
      if (!this.jsonEnabled()) process.stdout.write(sbom);
      return JSON.parse(sbom.toString('utf8')) as Record<string, unknown>;
    }
    const summary = await inspectPackage(this.args.file, { trust });
    this.log(formatPackageSummary(summary));
    return summary;
  }
}
