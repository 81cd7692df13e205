import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { LOCAL_CA_PATHS, readCaFilePins, type CaFilePins } from '../../trust/local-ca.js';

export default class CertsCaHash extends BaseCommand<typeof CertsCaHash> {
  static override summary = 'Print the sha256 pin of a CA certificate, for --discovery-token-ca-cert-hash.';
  static override description =
    'Prints sha256:<hex>, the SHA-256 of the DER SubjectPublicKeyInfo, for every certificate in the file, one per line ' +
    `(the same value kubeadm prints). Without --cert it reads the local control plane's CA: ${LOCAL_CA_PATHS.join(', then ')}.`;
  static override examples = [
    '<%= config.bin %> certs ca-hash',
    '<%= config.bin %> certs ca-hash --cert /var/lib/rancher/k3s/server/tls/server-ca.crt',
    '<%= config.bin %> certs ca-hash --cert ca.crt --json',
  ];
  static override flags = {
    cert: Flags.string({ summary: 'PEM file with the CA certificate(s) to pin.', helpValue: 'FILE' }),
  };

  async run(): Promise<CaFilePins> {
    const result = readCaFilePins({ certFile: this.flags.cert });
    for (const { pin } of result.certificates) this.log(pin);
    return result;
  }
}
