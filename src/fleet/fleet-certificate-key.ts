/**
 * The certificate key of a `fleet up` with several control planes. It
 * encrypts the control-plane join credential that init uploads to the
 * cluster (k3s: the server token; kubeadm: the CA keys in kubeadm-certs),
 * and the joining control planes decrypt it.
 *
 * A key made fresh on every run would make init upload the credential again
 * each time, so a re-run would never be "unchanged". The key is therefore
 * kept on the first control plane, root-only, beside edgeadm's install
 * state (recorded there, so reset removes it). That adds no exposure: the
 * key only protects that credential, and the credential is on that same
 * host, root-only, in plain text (k3s's token file, kubeadm's pki/). Nothing of it is kept on this machine or
 * in the run state.
 */
import { generateCertificateKey } from '../cluster/control-plane-join.js';
import { readHostFile } from '../cluster/host-files.js';
import { STATE_DIR, type StateRecorder } from '../cluster/state.js';
import { EdgeadmError } from '../errors.js';
import type { Host } from '../hosts/host.js';

/** Where the key is kept on the first control plane. */
export const FLEET_CERTIFICATE_KEY_FILE = `${STATE_DIR}/fleet-certificate-key`;

const KEY_SHAPE = /^[0-9a-f]{64}$/;

/** The key kept on the first control plane, or a new one (`isNew`) to keep once init has used it. */
export async function fleetCertificateKey(host: Host): Promise<{ key: string; isNew: boolean }> {
  if (await host.exists(FLEET_CERTIFICATE_KEY_FILE, { sudo: true })) {
    const key = (await readHostFile(host, FLEET_CERTIFICATE_KEY_FILE)).trim();
    // A damaged file is replaced: init then uploads the credential again with the new key.
    if (KEY_SHAPE.test(key)) return { key, isNew: false };
  }
  return { key: generateCertificateKey(), isNew: true };
}

/**
 * Keeps `key` on the host, recorded in the install state first (so that a
 * write cut off half way is still removed by reset).
 */
export async function keepFleetCertificateKey(host: Host, state: StateRecorder, key: string): Promise<void> {
  state.file(FLEET_CERTIFICATE_KEY_FILE);
  await state.save();
  try {
    await host.put(Buffer.from(`${key}\n`), FLEET_CERTIFICATE_KEY_FILE, {
      mode: 0o600,
      sudo: true,
      description: `keep the fleet's certificate key in ${FLEET_CERTIFICATE_KEY_FILE}`,
    });
  } catch (error) {
    throw new EdgeadmError(`cannot keep the certificate key on ${host.name}: ${(error as Error).message}`, {
      code: 'E_FLEET_CERTIFICATE_KEY',
      cause: error,
      hints: ['A re-run of fleet up makes a new key and uploads the control-plane join credential again.'],
    });
  }
}
