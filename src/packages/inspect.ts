/**
 * What a package holds, for people and scripts: `inspectPackage` verifies the
 * package first (a summary of an unverified package would be a claim nobody
 * checked), then summarises its manifest; `formatPackageSummary` renders the
 * summary as text with a file table.
 */
import { isAirgapImage, type PackageFile } from './manifest.js';
import { verifyPackage, type VerifiedPackage, type VerifyPackageOptions } from './verify.js';

/** The summary of a verified package (the `--json` document of `package inspect`). */
export interface PackageSummary {
  file: string;
  name: string;
  distribution: string;
  kubernetesVersion: string;
  arch: string;
  createdAt: string;
  fileCount: number;
  /** Sum of the file sizes, uncompressed. */
  totalBytes: number;
  /** Size of the package file. */
  archiveBytes: number;
  archiveSha256: string;
  files: PackageFile[];
  /** The airgap image archives among `files` (under images/), which the node imports into its runtime. */
  images: PackageFile[];
}

/** Verifies a package and summarises it. Throws the verification error if it is refused. */
export async function inspectPackage(file: string, options: VerifyPackageOptions = {}): Promise<PackageSummary> {
  return summarizePackage(await verifyPackage(file, options));
}

/** The summary of a package that was verified (or just built). */
export function summarizePackage(
  verified: Pick<VerifiedPackage, 'file' | 'manifest' | 'fileCount' | 'totalBytes' | 'archiveBytes' | 'archiveSha256'>,
): PackageSummary {
  const { manifest } = verified;
  return {
    file: verified.file,
    name: manifest.name,
    distribution: manifest.distribution,
    kubernetesVersion: manifest.kubernetesVersion,
    arch: manifest.arch,
    createdAt: manifest.createdAt,
    fileCount: verified.fileCount,
    totalBytes: verified.totalBytes,
    archiveBytes: verified.archiveBytes,
    archiveSha256: verified.archiveSha256,
    files: manifest.files,
    images: manifest.files.filter((file) => isAirgapImage(file.path, manifest.distribution)),
  };
}

/** A size in MiB with one decimal, as the CLI prints sizes (`12.3 MiB`). */
export function formatMiB(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** The human rendering of a summary: a header block, then one line per file (mode, size, SHA-256 prefix, path). */
export function formatPackageSummary(summary: PackageSummary): string {
  const lines = [
    `Package:       ${summary.name}`,
    `Distribution:  ${summary.distribution}`,
    `Kubernetes:    ${summary.kubernetesVersion}`,
    `Arch:          ${summary.arch}`,
    `Created:       ${summary.createdAt}`,
    `Files:         ${summary.fileCount} (${formatMiB(summary.totalBytes)} uncompressed)`,
    `Archive:       ${formatMiB(summary.archiveBytes)}, sha256 ${summary.archiveSha256}`,
    `Images:        ${summary.images.length === 0 ? 'none' : `${summary.images.length} airgap archive(s)`}`,
    ...summary.images.map(
      (image) => `  ${image.path.slice('images/'.length)}  ${formatMiB(image.size)}  sha256 ${image.sha256}`,
    ),
    '',
  ];
  const sizes = summary.files.map((file) => String(file.size));
  const sizeWidth = Math.max(4, ...sizes.map((size) => size.length));
  lines.push(`MODE  ${'SIZE'.padStart(sizeWidth)}  SHA256        PATH`);
  summary.files.forEach((file, index) => {
    lines.push(`${file.mode}  ${(sizes[index] ?? '').padStart(sizeWidth)}  ${file.sha256.slice(0, 12)}  ${file.path}`);
  });
  return lines.join('\n');
}
