/**
 * The checks a package entry's tar header allows for the manifest, the
 * signature and a listed file, before a byte of its content is read. The
 * archive scanner asks them as the package streams past.
 */
import { PackageError, PackageErrorCode } from './errors.js';
import { MANIFEST_PATH, modeString, type PackageFile } from './manifest.js';
import { MAX_SIGNATURE_BYTES, SIGNATURE_MODE, SIGNATURE_PATH } from './signature.js';

/** The mode manifest.json has in every package, so that a host can check it like any file. */
export const MANIFEST_MODE = 0o644;

/** An entry's header as the checks read it. */
export interface EntryHeader {
  /** The path as the archive holds it. */
  raw: string;
  /** The path quoted for a message. */
  name: string;
  size: number;
  mode: number;
}

/** The manifest entry: at most `maxManifestBytes`, mode 0644. */
export function checkManifestHeader({ raw, name, size, mode }: EntryHeader, maxManifestBytes: number): void {
  if (size > maxManifestBytes) {
    throw new PackageError(
      PackageErrorCode.TooLarge,
      `entry ${name} is ${size} bytes; the limit for the manifest is ${maxManifestBytes}`,
      { entry: raw, details: { size, limit: maxManifestBytes } },
    );
  }
  if (mode !== MANIFEST_MODE) {
    throw new PackageError(
      PackageErrorCode.Mode,
      `entry ${name} has mode ${modeString(mode)}; ${MANIFEST_PATH} is always ${modeString(MANIFEST_MODE)}`,
      { entry: raw, details: { mode: modeString(mode), expectedMode: modeString(MANIFEST_MODE) } },
    );
  }
}

/** The signature entry: second (`entryNumber`), right after the manifest it signs, mode 0644, small. */
export function checkSignatureHeader({ raw, name, size, mode }: EntryHeader, entryNumber: number): void {
  if (entryNumber !== 2) {
    throw new PackageError(
      PackageErrorCode.Signature,
      `entry ${name} is entry number ${entryNumber}; the signature is always the second entry, right after ${MANIFEST_PATH}`,
      { entry: raw },
    );
  }
  if (size > MAX_SIGNATURE_BYTES) {
    throw new PackageError(
      PackageErrorCode.Signature,
      `entry ${name} is ${size} bytes; a signature is at most ${MAX_SIGNATURE_BYTES}`,
      { entry: raw, details: { size, limit: MAX_SIGNATURE_BYTES } },
    );
  }
  if (mode !== SIGNATURE_MODE) {
    throw new PackageError(
      PackageErrorCode.Mode,
      `entry ${name} has mode ${modeString(mode)}; ${SIGNATURE_PATH} is always ${modeString(SIGNATURE_MODE)}`,
      { entry: raw, details: { mode: modeString(mode), expectedMode: modeString(SIGNATURE_MODE) } },
    );
  }
}

/** A listed file's entry: the size and mode the manifest gives it. */
export function checkListedFileHeader({ raw, name, size, mode }: EntryHeader, file: PackageFile): void {
  if (size !== file.size) {
    throw new PackageError(
      PackageErrorCode.Checksum,
      `entry ${name} is ${size} bytes; ${MANIFEST_PATH} says ${file.size}`,
      { entry: raw, details: { size, expectedSize: file.size } },
    );
  }
  if (modeString(mode) !== file.mode) {
    throw new PackageError(
      PackageErrorCode.Mode,
      `entry ${name} has mode ${modeString(mode)}; ${MANIFEST_PATH} says ${file.mode}`,
      { entry: raw, details: { mode: modeString(mode), expectedMode: file.mode } },
    );
  }
}
