import { readFileSync } from 'node:fs';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { ValidationError } from '../../errors.js';
import { loadPackageTrust } from '../../packages/package-trust.js';
import { MAX_SIGNATURE_BYTES } from '../../packages/signature.js';
import { signPackage } from '../../packages/sign.js';
import { readPrivateSigningKey } from '../../packages/signing-keys.js';

/** The `--json` document of `package sign`. */
export interface SignReport {
  file: string;
  name: string;
  manifestSha256: string;
  archiveSha256: string;
  /** The signing key's fingerprint (with --key), or the trusted key it verified with (with --signature and --trusted-key). */
  signedBy?: string;
  replacedSignature: boolean;
}

/** `edgeadm package sign PKG`: {@link signPackage}, and what it signed printed. */
export default class PackageSign extends BaseCommand<typeof PackageSign> {
  static override summary = 'Sign an install package that was built unsigned or elsewhere.';
  static override description = [
    'Verifies the package, then writes its manifest signature (ECDSA P-256 over manifest.json, the format of',
    '"cosign sign-blob --key") as the entry manifest.json.sig, replacing any old signature; the manifest and files',
    'keep their exact bytes. --key signs here; --signature attaches a signature made elsewhere, e.g. by',
    '"cosign sign-blob --key cosign.key --output-signature manifest.json.sig manifest.json" (take manifest.json',
    'out with "tar -xzf PKG manifest.json"); give --trusted-key to check it before it is attached.',
  ].join(' ');
  static override examples = [
    '<%= config.bin %> package sign pkg.tar.gz --key edgeadm-signing.key',
    '<%= config.bin %> package sign pkg.tar.gz --key edgeadm-signing.key -o pkg-signed.tar.gz --json',
    '<%= config.bin %> package sign pkg.tar.gz --signature manifest.json.sig --trusted-key cosign.pub',
  ];
  static override args = {
    file: Args.string({ description: 'The package file (.tar.gz).', required: true }),
  };
  static override flags = {
    key: Flags.string({ summary: 'The private key that signs (PEM, mode 0600), from "edgeadm package keygen".' }),
    signature: Flags.string({
      summary: "A signature made elsewhere over the package's manifest.json (base64), to attach.",
    }),
    output: Flags.string({ char: 'o', summary: 'Write the signed package here instead of replacing PKG.' }),
    'trusted-key': Flags.string({
      summary:
        'Check the new signature with this public key (repeatable) before anything is written; refused if it does not verify.',
      multiple: true,
    }),
  };

  async run(): Promise<SignReport> {
    const { flags } = this;
    if ((flags.key === undefined) === (flags.signature === undefined)) {
      throw new ValidationError('give --key (sign here) or --signature (attach a signature made elsewhere), not both', {
        code: 'E_FLAG_INVALID',
        hints: ['edgeadm package sign pkg.tar.gz --key edgeadm-signing.key'],
      });
    }
    const trust = flags['trusted-key'] === undefined ? undefined : loadPackageTrust(flags['trusted-key']);
    const signed = await signPackage({
      file: this.args.file,
      ...(flags.output === undefined ? {} : { output: flags.output }),
      ...(flags.key === undefined ? {} : { signingKey: readPrivateSigningKey(flags.key) }),
      ...(flags.signature === undefined ? {} : { signature: readSignatureFile(flags.signature) }),
      ...(trust === undefined ? {} : { trust }),
    });
    const signedBy = signed.signedBy ?? (signed.signer.isChecked ? signed.signer.fingerprint : undefined);
    this.log(
      `package ${signed.manifest.name} signed${signedBy === undefined ? '' : ` by ${signedBy}`}: ${signed.file} ` +
        `(sha256 ${signed.archiveSha256}${signed.hadSignature ? '; the old signature was replaced' : ''})`,
    );
    return {
      file: signed.file,
      name: signed.manifest.name,
      manifestSha256: signed.manifestSha256,
      archiveSha256: signed.archiveSha256,
      ...(signedBy === undefined ? {} : { signedBy }),
      replacedSignature: signed.hadSignature,
    };
  }
}

function readSignatureFile(file: string): Buffer {
  try {
    const bytes = readFileSync(file);
    if (bytes.length > MAX_SIGNATURE_BYTES) {
      throw new ValidationError(
        `--signature ${file} is ${bytes.length} bytes; a signature is at most ${MAX_SIGNATURE_BYTES}`,
        {
          code: 'E_PACKAGE_SIGNATURE',
          hints: ['Give the file "cosign sign-blob --output-signature" wrote (base64), not a bundle.'],
        },
      );
    }
    return bytes;
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    throw new ValidationError(`cannot read --signature ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`, {
      code: 'E_FLAG_INVALID',
    });
  }
}
