import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { buildPackage, createdAtFromSourceDateEpoch } from '../../packages/build.js';
import { formatMiB, summarizePackage, type PackageSummary } from '../../packages/inspect.js';
import { ARCHITECTURES, DISTRIBUTIONS } from '../../packages/manifest.js';
import { counted } from '../../log/counted.js';
import { readPrivateSigningKey } from '../../packages/signing-keys.js';

/** `edgeadm package build`: flags to {@link buildPackage}, and the result printed. */
export default class PackageBuild extends BaseCommand<typeof PackageBuild> {
  static override summary = 'Build an offline install package from a directory.';
  static override description = [
    'Packs the regular files of --from into a .tar.gz whose first entry is manifest.json (name, distribution,',
    'Kubernetes version, arch, creation time, and the SHA-256, size and mode of every file).',
    'Symbolic links, devices and FIFOs in the source are refused, not followed.',
    'Every package carries a CycloneDX bill of materials, sbom.cdx.json ("package inspect --sbom" prints it).',
    "With --sign-key the manifest is signed (ECDSA P-256, cosign's blob format) and the signature travels in",
    'the package as manifest.json.sig; it covers every file and the SBOM through the manifest.',
    'Set SOURCE_DATE_EPOCH for a reproducible build: the same directory then gives the same bytes (a signature',
    'differs each time it is made).',
  ].join(' ');
  static override examples = [
    '<%= config.bin %> package build --from ./pkg --distribution k3s --kubernetes-version v1.30.4 --arch amd64 -o edge-k3s.tar.gz',
    '<%= config.bin %> package build --from ./pkg --distribution k3s --kubernetes-version v1.30.4 --arch amd64 -o edge-k3s.tar.gz --sign-key edgeadm-signing.key',
    'SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) <%= config.bin %> package build --from ./pkg --distribution kubeadm --kubernetes-version v1.30.4 --arch arm64 -o pkg.tar.gz --name site-kubeadm',
  ];
  static override flags = {
    from: Flags.string({
      summary: 'Directory holding the files to package (bin/, images/, cni/, assets/).',
      required: true,
    }),
    distribution: Flags.option({ options: DISTRIBUTIONS, summary: 'Kubernetes distribution.', required: true })(),
    'kubernetes-version': Flags.string({
      summary: 'Kubernetes version the package carries, e.g. v1.30.4.',
      required: true,
    }),
    arch: Flags.option({ options: ARCHITECTURES, summary: 'CPU architecture of the binaries.', required: true })(),
    output: Flags.string({ char: 'o', summary: 'Package file to write (.tar.gz).', required: true }),
    name: Flags.string({ summary: 'Package name [default: edge-<distribution>-<version>-<arch>].' }),
    'sign-key': Flags.string({
      summary: 'Sign the package with this private key (PEM, mode 0600), from "edgeadm package keygen".',
    }),
    images: Flags.string({
      summary: 'Directory of airgap image archives to carry as images/ (k3s: .tar, .tar.gz, .tar.zst; kubeadm: .tar).',
    }),
  };

  async run(): Promise<PackageSummary> {
    const { flags } = this;
    // Read before anything is built: a key that cannot sign fails in a second, not after packing gigabytes.
    const signingKey = flags['sign-key'] === undefined ? undefined : readPrivateSigningKey(flags['sign-key']);
    const built = await buildPackage({
      from: flags.from,
      distribution: flags.distribution,
      kubernetesVersion: flags['kubernetes-version'],
      arch: flags.arch,
      output: flags.output,
      ...(flags.name === undefined ? {} : { name: flags.name }),
      ...(flags.images === undefined ? {} : { images: flags.images }),
      ...withCreatedAt(createdAtFromSourceDateEpoch(process.env.SOURCE_DATE_EPOCH)),
      ...(signingKey === undefined ? {} : { signingKey }),
    });
    for (const warning of built.warnings) this.warnAlways(warning);
    this.logger.info(`built ${built.file}: sha256 ${built.archiveSha256}`);
    this.log(
      `package ${built.manifest.name} built: ${built.file} (${counted(built.fileCount, 'file')}, ${formatMiB(built.totalBytes)}; ` +
        `archive ${formatMiB(built.archiveBytes)}, sha256 ${built.archiveSha256})`,
    );
    if (built.signedBy !== undefined) this.log(`signed by ${built.signedBy}`);
    return summarizePackage({
      ...built,
      signer: { isChecked: false, isSigned: built.signatureBytes !== undefined },
      ...(built.signedBy === undefined ? {} : { signedBy: built.signedBy }),
    });
  }
}

function withCreatedAt(createdAt: Date | undefined): { createdAt?: Date } {
  return createdAt === undefined ? {} : { createdAt };
}
