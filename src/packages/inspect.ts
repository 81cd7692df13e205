/**
 * What a package holds, for people and scripts: `inspectPackage` verifies the
 * package first (a summary of an unverified package would be a claim nobody
 * checked), then summarises its manifest; `formatPackageSummary` renders the
 * summary as text with a file table. `readPackageSbom` verifies a package and
 * takes its SBOM out in the same single pass.
 */
import { scanArchive, type EntryWriter, type FileSink } from './archive-scanner.js';
import { inPackage, PackageError, PackageErrorCode } from './errors.js';
import { resolveLimits } from './limits.js';
import { isAirgapImage, type PackageFile } from './manifest.js';
import { SBOM_PATH } from './sbom.js';
import { checkPackageOrigin, UNPINNED_TRUST, type SignerCheck } from './signature.js';
import { openPackageFile, verifyPackage, type VerifiedPackage, type VerifyPackageOptions } from './verify.js';

/** Who signed a package, as far as the summary can tell. */
export interface SignatureSummary {
  /** Whether the package carries a signature. */
  isSigned: boolean;
  /** Whether it was checked against a pinned key (--trusted-key) and verified. */
  isOriginChecked: boolean;
  /** The fingerprint of the key that signed it: the pinned key it verified with, or the key `package build` signed with. */
  signedBy?: string;
  /** The pinned key file it verified with. */
  trustedKeyFile?: string;
}

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
  signature: SignatureSummary;
  /** Where the package's bill of materials is, when it has one (packages built before edgeadm wrote one do not). */
  sbom?: string;
}

/** Verifies a package and summarises it. Throws the verification error if it is refused. */
export async function inspectPackage(file: string, options: VerifyPackageOptions = {}): Promise<PackageSummary> {
  return summarizePackage(await verifyPackage(file, options));
}

/** The summary of a package that was verified (or just built). */
export function summarizePackage(
  verified: Pick<
    VerifiedPackage,
    'file' | 'manifest' | 'fileCount' | 'totalBytes' | 'archiveBytes' | 'archiveSha256' | 'signer'
  > & { signedBy?: string },
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
    signature: signatureSummary(verified.signer, verified.signedBy),
    ...(manifest.files.some((file) => file.path === SBOM_PATH) ? { sbom: SBOM_PATH } : {}),
  };
}

function signatureSummary(signer: SignerCheck, signedBy: string | undefined): SignatureSummary {
  if (signer.isChecked) {
    return { isSigned: true, isOriginChecked: true, signedBy: signer.fingerprint, trustedKeyFile: signer.keyFile };
  }
  return { isSigned: signer.isSigned, isOriginChecked: false, ...(signedBy === undefined ? {} : { signedBy }) };
}

/** The summary's signature line for people. */
export function describeSignature(signature: SignatureSummary): string {
  if (signature.isOriginChecked)
    return `verified: signed by ${signature.signedBy} (trusted key ${signature.trustedKeyFile})`;
  if (signature.signedBy !== undefined) return `signed by ${signature.signedBy}`;
  if (signature.isSigned) return 'present, NOT checked (no --trusted-key pinned)';
  return 'none (the origin of this package cannot be checked)';
}

/** Largest SBOM taken out of a package: it lists a few thousand files at most. */
export const MAX_SBOM_BYTES = 16 * 1024 * 1024;

/**
 * Verifies a package (against `trust`, when given) and returns it with its
 * SBOM's bytes, read in the same pass.
 *
 * @throws {PackageError} the verification's refusal; `E_PACKAGE_MISSING_FILE`
 * when the package has no SBOM (built by an edgeadm before it wrote one).
 */
export async function readPackageSbom(
  file: string,
  options: VerifyPackageOptions = {},
): Promise<{ verified: VerifiedPackage; sbom: Buffer }> {
  const handle = await openPackageFile(file);
  const chunks: Buffer[] = [];
  let size = 0;
  const writer: EntryWriter = {
    open: async (path: string): Promise<FileSink> => ({
      write: async (chunk: Buffer) => {
        if (path !== SBOM_PATH) return;
        size += chunk.length;
        if (size > MAX_SBOM_BYTES) {
          throw new PackageError(PackageErrorCode.TooLarge, `${SBOM_PATH} is over ${MAX_SBOM_BYTES} bytes`, {
            entry: SBOM_PATH,
          });
        }
        chunks.push(Buffer.from(chunk));
      },
      close: async () => undefined,
    }),
  };
  try {
    const scanned = await scanArchive({ handle, limits: resolveLimits(options.limits), writer });
    const signer = checkPackageOrigin(scanned.manifestBytes, scanned.signatureBytes, options.trust ?? UNPINNED_TRUST);
    if (!scanned.manifest.files.some((entry) => entry.path === SBOM_PATH)) {
      throw new PackageError(PackageErrorCode.MissingFile, `the package holds no ${SBOM_PATH}`, {
        entry: SBOM_PATH,
        hints: ['Packages built by edgeadm before it wrote a bill of materials have none: build the package again.'],
      });
    }
    return { verified: { file, ...scanned, signer }, sbom: Buffer.concat(chunks) };
  } catch (error) {
    throw inPackage(error, options.label ?? file);
  } finally {
    await handle.close();
  }
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
    `Signature:     ${describeSignature(summary.signature)}`,
    `SBOM:          ${summary.sbom ?? 'none'}`,
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
