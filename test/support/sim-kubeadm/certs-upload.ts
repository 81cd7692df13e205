/**
 * The SIMULATED kubeadm's (not kubeadm's) upload-certs and download-certs,
 * written independently of edgeadm's code, as kubeadm does them
 * (cmd/kubeadm/app/phases/copycerts):
 *
 * - upload: a short-lived bootstrap token (2 h, no usages: it only carries
 *   the expiry) owns kube-system/kubeadm-certs, whose entries are the
 *   control-plane CA files under their secret names (`etcd/ca.crt` →
 *   `etcd-ca.crt`), each AES-256-GCM encrypted with the certificate key
 *   (nonce first, tag last); a missing file is an empty entry. The Role and
 *   RoleBinding `kubeadm:kubeadm-certs` let the default node token's group
 *   get that one Secret. Objects are created, or replaced when they exist
 *   (kubeadm's CreateOrUpdate), so annotations of an older upload go.
 * - download: with the bootstrap token, every non-empty entry is decrypted
 *   (one failure fails all, nothing written) and written under the PKI
 *   directory.
 *
 * The simulated cluster's control plane only has the cluster CA (ca.crt,
 * ca.key); the other entries stay empty, as for files kubeadm does not find.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { call, writeAtomically } from '../sim-node.js';
import { KubeadmError, PKI_DIR, type KubeconfigAccess } from './layout.js';

/** kubeadm's Secret and Role names. */
export const KUBEADM_CERTS_SECRET = 'kubeadm-certs';
const KUBEADM_CERTS_ROLE = 'kubeadm:kubeadm-certs';
/** The group of kubeadm's default node bootstrap tokens. */
export const NODE_BOOTSTRAP_GROUP = 'system:bootstrappers:kubeadm:default-node-token';
/** kubeadm's DefaultCertTokenDuration. */
const CERT_TOKEN_TTL_MS = 2 * 60 * 60_000;
/** The files kubeadm transfers (stacked etcd), relative to the PKI directory. */
const TRANSFERRED = [
  'ca.crt',
  'ca.key',
  'front-proxy-ca.crt',
  'front-proxy-ca.key',
  'sa.pub',
  'sa.key',
  'etcd/ca.crt',
  'etcd/ca.key',
];
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

type Doc = Record<string, unknown>;

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** The key bytes of a hex certificate key; kubeadm wants an AES-256 key. */
export function certificateKeyBytes(hex: string): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(hex) ? Buffer.from(hex, 'hex') : undefined;
  if (!key) throw new KubeadmError('error decoding certificate key: the key must be 32 bytes, hex encoded');
  return key;
}

function encrypt(data: Buffer, key: Buffer): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  return Buffer.concat([nonce, cipher.update(data), cipher.final(), cipher.getAuthTag()]);
}

function decrypt(data: Buffer, key: Buffer): Buffer {
  if (data.length < NONCE_BYTES + TAG_BYTES) throw new Error('the data is too short');
  const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, NONCE_BYTES));
  decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
  return Buffer.concat([decipher.update(data.subarray(NONCE_BYTES, data.length - TAG_BYTES)), decipher.final()]);
}

function secretName(file: string): string {
  return file.replaceAll('/', '-');
}

const b64 = (text: string): string => Buffer.from(text).toString('base64');

async function request(access: KubeconfigAccess, method: string, path: string, body?: Doc) {
  return call({ ...access, method, url: `${access.server}${path}`, ...(body ? { body } : {}) });
}

/** kubeadm's CreateOrUpdate: create, or replace what is there. */
async function createOrUpdate(access: KubeconfigAccess, collection: string, object: Doc): Promise<Doc> {
  const created = await request(access, 'POST', collection, object);
  if (created.status === 201 || created.status === 200) return JSON.parse(created.body) as Doc;
  const name = (object.metadata as { name: string }).name;
  if (created.status !== 409)
    throw new KubeadmError(`unable to create ${name}: HTTP ${created.status} ${created.body}`);
  const current = JSON.parse((await request(access, 'GET', `${collection}/${name}`)).body) as Doc;
  const metadata = { ...(object.metadata as Doc), resourceVersion: (current.metadata as Doc).resourceVersion };
  const replaced = await request(access, 'PUT', `${collection}/${name}`, { ...object, metadata });
  if (replaced.status !== 200) throw new KubeadmError(`unable to update ${name}: HTTP ${replaced.status}`);
  return JSON.parse(replaced.body) as Doc;
}

function tokenPart(length: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return [...randomBytes(length)].map((byte) => alphabet[byte % alphabet.length]).join('');
}

/** `kubeadm init phase upload-certs --upload-certs` with `key`, as the admin, from `pkiDir`. */
export async function uploadCerts(admin: KubeconfigAccess, keyHex: string, pkiDir = PKI_DIR): Promise<void> {
  const key = certificateKeyBytes(keyHex);
  say(`[upload-certs] Storing the certificates in Secret "${KUBEADM_CERTS_SECRET}" in the "kube-system" Namespace`);
  const secrets = '/api/v1/namespaces/kube-system/secrets';
  const id = tokenPart(6);
  const token = await createOrUpdate(admin, secrets, {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'bootstrap.kubernetes.io/token',
    metadata: { name: `bootstrap-token-${id}`, namespace: 'kube-system' },
    data: {
      'token-id': b64(id),
      'token-secret': b64(tokenPart(16)),
      expiration: b64(new Date(Date.now() + CERT_TOKEN_TTL_MS).toISOString()),
      description: b64('Proxy for managing TTL for the kubeadm-certs secret'),
    },
  });
  const data: Record<string, string> = {};
  for (const file of TRANSFERRED) {
    const path = join(pkiDir, file);
    data[secretName(file)] = existsSync(path) ? encrypt(await readFile(path), key).toString('base64') : '';
  }
  const tokenMeta = token.metadata as { name: string; uid: string };
  await createOrUpdate(admin, secrets, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: KUBEADM_CERTS_SECRET,
      namespace: 'kube-system',
      ownerReferences: [
        {
          apiVersion: 'v1',
          kind: 'Secret',
          name: tokenMeta.name,
          uid: tokenMeta.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    data,
  });
  const rbac = '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system';
  await createOrUpdate(admin, `${rbac}/roles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: KUBEADM_CERTS_ROLE, namespace: 'kube-system' },
    rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: [KUBEADM_CERTS_SECRET], verbs: ['get'] }],
  });
  await createOrUpdate(admin, `${rbac}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: KUBEADM_CERTS_ROLE, namespace: 'kube-system' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: KUBEADM_CERTS_ROLE },
    subjects: [{ kind: 'Group', name: NODE_BOOTSTRAP_GROUP }],
  });
}

/** `[download-certs]` of `kubeadm join --control-plane`, with the bootstrap token, into `pkiDir`. Returns the files written. */
export async function downloadCerts(bootstrap: KubeconfigAccess, keyHex: string, pkiDir = PKI_DIR): Promise<string[]> {
  const key = certificateKeyBytes(keyHex);
  say(
    `[download-certs] Downloading the certificates in Secret "${KUBEADM_CERTS_SECRET}" in the "kube-system" Namespace`,
  );
  const response = await request(bootstrap, 'GET', `/api/v1/namespaces/kube-system/secrets/${KUBEADM_CERTS_SECRET}`);
  if (response.status === 404) {
    throw new KubeadmError(
      `error downloading the secret: Secret "${KUBEADM_CERTS_SECRET}" was not found in the "kube-system" Namespace. This Secret might have expired. Please, run \`kubeadm init phase upload-certs --upload-certs\` on a control plane to generate a new one`,
    );
  }
  if (response.status !== 200) {
    throw new KubeadmError(`error downloading the secret: HTTP ${response.status} ${response.body.slice(0, 200)}`);
  }
  const entries = Object.entries(((JSON.parse(response.body) as Doc).data ?? {}) as Record<string, string>);
  const plain = new Map<string, Buffer>();
  for (const [name, value] of entries) {
    if (value === '') continue;
    try {
      plain.set(name, decrypt(Buffer.from(value, 'base64'), key));
    } catch {
      // Nothing is written when any entry fails, as kubeadm returns no partial result.
      throw new KubeadmError('error decoding secret data with provided key: cipher: message authentication failed');
    }
  }
  const written: string[] = [];
  for (const file of TRANSFERRED) {
    const data = plain.get(secretName(file));
    if (!data) continue;
    const path = join(pkiDir, file);
    await writeAtomically(path, data.toString('utf8'), file.endsWith('.key') ? 0o600 : 0o644);
    written.push(path);
  }
  return written;
}
