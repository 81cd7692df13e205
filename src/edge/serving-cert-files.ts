/**
 * A serving certificate given as files (`--tls-cert`, `--tls-key`), taken up
 * again when they change. On a k3s edge node they are the node's kubelet
 * serving certificate, which the k3s agent asks its supervisor for and
 * writes anew at every start (src/edge/README.md, "The k3s supervisor"):
 * the proxy, running longer than any one agent, must not keep serving the
 * first one it read until it expires.
 *
 * A pair that does not belong together (the certificate written, the key
 * not yet) is not taken: the one in use stays until the next check finds a
 * whole pair. Time is read through a clock, so the rule is tested without
 * waiting.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';

/** The certificate and key files, and the PEMs read from them. */
export interface ServingCertFilePaths {
  certFile: string;
  keyFile: string;
}

function stampOf(files: ServingCertFilePaths): string {
  const cert = statSync(files.certFile);
  const key = statSync(files.keyFile);
  return `${cert.mtimeMs}:${cert.size}:${key.mtimeMs}:${key.size}`;
}

/** Watches one certificate and key pair by their files' times and sizes. */
export class ServingCertFiles {
  #stamp: string;

  constructor(private readonly files: ServingCertFilePaths) {
    this.#stamp = stampOf(files);
  }

  /**
   * The new pair when the files changed since the last pair taken and hold
   * a certificate whose public key matches the key; otherwise undefined.
   *
   * @throws Error when the files cannot be read or do not pair up (the
   * caller logs it and keeps what it serves).
   */
  changed(): { certPem: string; keyPem: string } | undefined {
    const stamp = stampOf(this.files);
    if (stamp === this.#stamp) return undefined;
    const certPem = readFileSync(this.files.certFile, 'utf8');
    const keyPem = readFileSync(this.files.keyFile, 'utf8');
    if (!new X509Certificate(certPem).checkPrivateKey(createPrivateKey(keyPem))) {
      throw new Error(`${this.files.certFile} and ${this.files.keyFile} do not belong together (yet)`);
    }
    this.#stamp = stamp;
    return { certPem, keyPem };
  }
}
