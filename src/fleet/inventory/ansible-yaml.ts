/**
 * YAML as Ansible reads it: YAML 1.1 through PyYAML, so `02222` is octal
 * (1170), `0b11` binary, `1:20` sexagesimal (80), `yes`/`on` booleans (but
 * `y` and `n` text, as PyYAML resolves them), `<<` merge keys applied, and a
 * key written twice keeps its last value (Ansible warns, then goes on).
 * `!unsafe` values are plain text; `!vault` values are refused, since edgeadm
 * does not decrypt Ansible Vault.
 *
 * Pure: no I/O.
 */
import { NOT_RESOLVED, YAML11_SCHEMA, defineScalarTag, load } from 'js-yaml';
import { ValidationError } from '../../errors.js';

/** PyYAML's implicit booleans (its resolver leaves `y`, `n` and their capitals as text). */
const PYYAML_BOOLEAN = /^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/;

const pyyamlBool = defineScalarTag<boolean>('tag:yaml.org,2002:bool', {
  implicit: true,
  implicitFirstChars: ['y', 'Y', 'n', 'N', 't', 'T', 'f', 'F', 'o', 'O'],
  resolve: (source) => (PYYAML_BOOLEAN.test(source) ? /^(?:yes|true|on)$/i.test(source) : NOT_RESOLVED),
  identify: (data) => typeof data === 'boolean',
});

const unsafeText = defineScalarTag<string>('!unsafe', { resolve: (source) => source, identify: () => false });

/** Marks a `!vault` value; the inventory reader refuses it where edgeadm needs it. */
export class VaultValue {
  readonly ciphertext: string;

  constructor(ciphertext: string) {
    this.ciphertext = ciphertext;
  }
}
const vaultValue = defineScalarTag<VaultValue>('!vault', {
  resolve: (source) => new VaultValue(source),
  identify: (data) => data instanceof VaultValue,
});

const ANSIBLE_SCHEMA = YAML11_SCHEMA.withTags(pyyamlBool, unsafeText, vaultValue);

/** The header of a file that `ansible-vault encrypt` wrote. */
export const VAULT_FILE_HEADER = '$ANSIBLE_VAULT;';

/** Hints shared by every refusal of Ansible Vault. */
export const VAULT_HINTS = [
  'edgeadm does not decrypt Ansible Vault. Keep the connection variables (ansible_host, ansible_user, ansible_port, key files) unencrypted,',
  'and pass secrets with the --ssh-* flags (--ssh-password-file, --sudo-password-file), or write the inventory out with',
  '"ansible-inventory -i FILE --list --yaml --output inventory.yml" after decrypting.',
];

/**
 * Parses `text` as Ansible would. Throws a ValidationError (`E_INVENTORY`)
 * naming the file and line for text that is not YAML, and
 * `E_INVENTORY_VAULT` for a vault-encrypted file.
 */
export function loadAnsibleYaml(text: string, file: string): unknown {
  if (text.trimStart().startsWith(VAULT_FILE_HEADER)) {
    throw new ValidationError(`${file}: is encrypted with Ansible Vault`, {
      code: 'E_INVENTORY_VAULT',
      hints: VAULT_HINTS,
      details: { file },
    });
  }
  try {
    return load(text, { filename: file, schema: ANSIBLE_SCHEMA, json: true });
  } catch (error) {
    const mark = (error as { mark?: { line?: number } }).mark;
    const line = mark?.line === undefined ? '' : `:${mark.line + 1}`;
    throw new ValidationError(
      `${file}${line}: not valid YAML: ${(error as { reason?: string }).reason ?? String(error)}`,
      {
        code: 'E_INVENTORY',
        cause: error,
        details: { file, ...(mark?.line === undefined ? {} : { line: mark.line + 1 }) },
      },
    );
  }
}
