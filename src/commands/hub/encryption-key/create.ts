import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { ValidationError } from '../../../errors.js';
import { newEncryptionKeyFileText, parseEncryptionKeyFile } from '../../../hub/store/etcd/encryption.js';

/** What `hub encryption-key create --json` prints (never the key). */
export interface HubEncryptionKeyCreateResult {
  file: string;
  keyId: string;
}

export default class HubEncryptionKeyCreate extends BaseCommand<typeof HubEncryptionKeyCreate> {
  static override summary = 'Make the key file that encrypts the secrets a hub keeps in etcd (mode 0600).';
  static override description =
    'Give the same file to every hub replica with --encryption-key-file, and keep a copy: without it the ' +
    "hub's CA key, ticket key and token secrets in etcd cannot be read. Same as: umask 077; openssl rand -base64 32 > FILE.";
  static override examples = ['<%= config.bin %> hub encryption-key create /etc/edgeadm/hub-encryption.key'];
  static override args = { file: Args.string({ required: true, description: 'Where to write the key file.' }) };
  static override flags = {
    force: Flags.boolean({
      summary: 'Replace an existing file (the secrets encrypted under its key become unreadable).',
    }),
  };

  async run(): Promise<HubEncryptionKeyCreateResult> {
    const file = resolve(this.args.file);
    if (existsSync(file) && !this.flags.force) {
      throw new ValidationError(`${file} exists already`, {
        code: 'E_HUB_ENCRYPTION_KEY_EXISTS',
        hints: [
          'Replacing a key in use makes what etcd holds unreadable; to rotate, put a new key above the old one in the file.',
        ],
      });
    }
    const text = newEncryptionKeyFileText();
    writeFileSync(file, text, { mode: 0o600, flag: this.flags.force ? 'w' : 'wx' });
    const keyId = parseEncryptionKeyFile(text, file).ids[0] ?? '';
    this.log(`wrote ${file} (key ${keyId}); give it to every hub replica with --encryption-key-file`);
    return { file, keyId };
  }
}
