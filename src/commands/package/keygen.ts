import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { generateSigningKeyPair, SIGNATURE_ALGORITHM, writeKeyPair } from '../../packages/signing-keys.js';

/** The `--json` document of `package keygen`: paths and the fingerprint, never the key. */
export interface KeygenReport {
  privateKeyFile: string;
  publicKeyFile: string;
  fingerprint: string;
  algorithm: string;
}

/** `edgeadm package keygen`: {@link generateSigningKeyPair} written by {@link writeKeyPair}. */
export default class PackageKeygen extends BaseCommand<typeof PackageKeygen> {
  static override summary = 'Make a key pair that signs install packages (ECDSA P-256, in PEM forms cosign reads).';
  static override description = [
    'Writes PREFIX.key (the private key, PKCS#8 PEM, mode 0600) and PREFIX.pub (the public key, PKIX PEM, what',
    '"cosign verify-blob --key" reads). Keep the private key where packages are built; give the public key to',
    'every operator who installs them (--trusted-key). "cosign import-key-pair --key PREFIX.key" turns the',
    'private key into a cosign.key. Existing files are never replaced without --force.',
  ].join(' ');
  static override examples = [
    '<%= config.bin %> package keygen',
    '<%= config.bin %> package keygen --output-key-prefix site-a-2025 --json',
  ];
  static override flags = {
    'output-key-prefix': Flags.string({
      summary: 'Where to write the pair: PREFIX.key and PREFIX.pub.',
      default: 'edgeadm-signing',
    }),
    force: Flags.boolean({
      summary: 'Replace existing key files (packages signed with the old key no longer verify with the new one).',
    }),
  };

  async run(): Promise<KeygenReport> {
    const prefix = this.flags['output-key-prefix'];
    const written = await writeKeyPair(generateSigningKeyPair(), {
      privateKeyFile: `${prefix}.key`,
      publicKeyFile: `${prefix}.pub`,
      isOverwriteAllowed: this.flags.force,
    });
    this.log(`private key: ${written.privateKeyFile} (mode 0600; keep it secret, it signs packages)`);
    this.log(`public key:  ${written.publicKeyFile} (pin it with --trusted-key where packages are installed)`);
    this.log(`fingerprint: ${written.fingerprint}`);
    return { ...written, algorithm: SIGNATURE_ALGORITHM };
  }
}
