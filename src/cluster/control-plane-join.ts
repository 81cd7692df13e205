/**
 * More control planes (HA), kubeadm's way: `init --control-plane-endpoint …
 * --upload-certs` keeps what another control plane needs in the cluster,
 * encrypted with a certificate key; `join --control-plane --certificate-key
 * …` fetches it with the bootstrap token, decrypts it, and starts another
 * control plane that joins the first.
 *
 * For k3s, what another server needs is the server token: k3s joins servers
 * only with it (not with a bootstrap token), and uses it to decrypt the
 * cluster's bootstrap data (CA keys) kept in the datastore, so the first
 * server must run embedded etcd (`cluster-init`). The token is a cluster
 * admin credential, so it is stored only encrypted (AES-256-GCM with the
 * certificate key, as kubeadm stores its certificates in kubeadm-certs),
 * readable only by bootstrap tokens, and the certificate key never reaches
 * the cluster. The joining server's token is rebuilt from the CA that
 * discovery verified by pin (`K10<hash of that CA>::server:<password>`).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { EdgeadmError, ValidationError } from '../errors.js';
import { KubeClient, corePath, type KubeObject } from '../kube/client.js';
import { DEFAULT_BOOTSTRAP_TOKEN_GROUP, formatBootstrapToken, type BootstrapToken } from '../trust/bootstrap-token.js';
import type { DiscoveryResult } from '../trust/discovery.js';
import { buildK3sToken, parseK3sToken } from '../trust/k3s-token.js';
import type { Phase, PhaseOutcome } from '../workflow/phase.js';
import { waitForApiReady } from './api-ready.js';
import { readHostFile } from './host-files.js';
import { applyObjects, describeObject } from './manifests.js';
import type { NodeData } from './node-context.js';
import { configureAndStartService } from './service-phase.js';

/** The Secret (kube-system) that holds the encrypted control-plane join credential. */
export const CONTROL_PLANE_JOIN_SECRET = 'edgeadm-control-plane-join';
/** The Role and RoleBinding that let bootstrap tokens read that Secret. */
export const CONTROL_PLANE_JOIN_ROLE = 'edgeadm:control-plane-join';
/** The annotation with the credential's expiry. */
export const EXPIRES_ANNOTATION = 'edgeadm.io/expires';
/** How long an uploaded credential may be used (kubeadm keeps uploaded certificates two hours). */
export const CONTROL_PLANE_JOIN_TTL_MS = 2 * 60 * 60_000;
/** How long join waits for the new control plane's /readyz. */
export const CONTROL_PLANE_READY_TIMEOUT_MS = 180_000;
/** How often it asks. */
export const CONTROL_PLANE_READY_POLL_MS = 1_000;

const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** A new certificate key: 32 random bytes, hex, as kubeadm's. */
export function generateCertificateKey(): string {
  return randomBytes(KEY_BYTES).toString('hex');
}

/**
 * The key bytes of a certificate key.
 *
 * @throws {ValidationError} `E_CERTIFICATE_KEY_INVALID`.
 */
export function parseCertificateKey(text: string): Buffer {
  if (!/^[0-9a-f]{64}$/.test(text)) {
    throw new ValidationError('--certificate-key must be 64 hex characters (32 bytes)', {
      code: 'E_CERTIFICATE_KEY_INVALID',
      hints: ['edgeadm init --upload-certs prints one; "openssl rand -hex 32" makes one.'],
    });
  }
  return Buffer.from(text, 'hex');
}

/** AES-256-GCM, nonce first and tag last, base64. Pure apart from the random nonce. */
export function encryptWithCertificateKey(plaintext: string, certificateKey: string): string {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', parseCertificateKey(certificateKey), nonce);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64');
}

/**
 * Decrypts what {@link encryptWithCertificateKey} made.
 *
 * @throws {EdgeadmError} `E_CERTIFICATE_KEY_MISMATCH` when the key is not
 * the one it was encrypted with (or the data was altered).
 */
export function decryptWithCertificateKey(sealed: string, certificateKey: string): string {
  const bytes = Buffer.from(sealed, 'base64');
  try {
    if (bytes.length < NONCE_BYTES + TAG_BYTES) throw new Error('too short');
    const decipher = createDecipheriv(
      'aes-256-gcm',
      parseCertificateKey(certificateKey),
      bytes.subarray(0, NONCE_BYTES),
    );
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    return Buffer.concat([
      decipher.update(bytes.subarray(NONCE_BYTES, bytes.length - TAG_BYTES)),
      decipher.final(),
    ]).toString('utf8');
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    throw new EdgeadmError('the control-plane join credential does not decrypt with this --certificate-key', {
      code: 'E_CERTIFICATE_KEY_MISMATCH',
      hints: [
        'Use the --certificate-key that init --upload-certs printed, or upload again: edgeadm init phase upload-certs --upload-certs --control-plane-endpoint … on the first control plane.',
      ],
    });
  }
}

/** The Secret and the RBAC that lets bootstrap tokens (and nothing else new) read it. Pure. */
export function controlPlaneJoinObjects(options: { sealed: string; expires: Date }): KubeObject[] {
  const labels = { 'app.kubernetes.io/managed-by': 'edgeadm' };
  return [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: CONTROL_PLANE_JOIN_SECRET,
        namespace: 'kube-system',
        labels,
        annotations: { [EXPIRES_ANNOTATION]: options.expires.toISOString() },
      },
      type: 'Opaque',
      data: { 'server-token.sealed': Buffer.from(options.sealed).toString('base64') },
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: CONTROL_PLANE_JOIN_ROLE, namespace: 'kube-system', labels },
      rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: [CONTROL_PLANE_JOIN_SECRET], verbs: ['get'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: CONTROL_PLANE_JOIN_ROLE, namespace: 'kube-system', labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: CONTROL_PLANE_JOIN_ROLE },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: DEFAULT_BOOTSTRAP_TOKEN_GROUP }],
    },
  ];
}

const secretPath = corePath('secrets', { namespace: 'kube-system', name: CONTROL_PLANE_JOIN_SECRET });

/** What the upload-certs phase needs of init. */
export interface UploadCertsData extends NodeData {
  isUploadCerts: boolean;
  /** Given with --certificate-key, or made by the phase. A secret. */
  certificateKey?: string;
}

/** Makes init's upload-certs phase. */
export function uploadCertsPhase<C extends UploadCertsData>(deps: {
  adminClient: (ctx: C) => Promise<KubeClient>;
}): Phase<C> {
  return {
    name: 'upload-certs',
    summary:
      'With --upload-certs: keep what another control plane needs (k3s: the server token) in the cluster, encrypted with the certificate key',
    runIf: (ctx) => ctx.isUploadCerts,
    async run(ctx) {
      const tokenPath = ctx.distribution.serverTokenPath;
      if (!tokenPath) {
        throw new ValidationError(`--upload-certs is not built for ${ctx.distribution.name} in this phase`, {
          code: 'E_NOT_BUILT',
        });
      }
      ctx.certificateKey ??= generateCertificateKey();
      if (ctx.isDryRun) {
        ctx.say(
          `Would read ${tokenPath}, encrypt it with the certificate key and apply kube-system/${CONTROL_PLANE_JOIN_SECRET} (and the RBAC letting bootstrap tokens read it)`,
        );
        return 'unchanged';
      }
      const client = await deps.adminClient(ctx);
      const serverToken = (await readHostFile(ctx.host, tokenPath)).trim();
      const existing = await client.get<KubeObject & { data?: Record<string, string> }>(secretPath);
      const existingSealed = existing?.data?.['server-token.sealed'];
      const expires = Date.parse(existing?.metadata?.annotations?.[EXPIRES_ANNOTATION] ?? '');
      let sealed: string | undefined;
      if (existingSealed && expires - Date.now() > CONTROL_PLANE_JOIN_TTL_MS / 2) {
        try {
          const plain = decryptWithCertificateKey(
            Buffer.from(existingSealed, 'base64').toString('utf8'),
            ctx.certificateKey,
          );
          if (plain === serverToken) sealed = Buffer.from(existingSealed, 'base64').toString('utf8');
        } catch {
          // Another key: upload again with this one.
        }
      }
      const isFresh = sealed === undefined;
      const objects = controlPlaneJoinObjects({
        sealed: sealed ?? encryptWithCertificateKey(serverToken, ctx.certificateKey),
        expires: isFresh ? new Date(Date.now() + CONTROL_PLANE_JOIN_TTL_MS) : new Date(expires),
      });
      const changed = await applyObjects(client, objects);
      for (const object of objects) {
        ctx.say(`${changed.includes(object) ? 'applied' : 'already applied'} ${describeObject(object)}`);
      }
      return changed.length > 0 ? 'changed' : 'unchanged';
    },
  };
}

/** What the control-plane-join phase needs of join. */
export interface ControlPlaneJoinData extends NodeData {
  isControlPlane: boolean;
  token: BootstrapToken;
  certificateKey?: string;
  /** The joining server's token, once fetched and decrypted. A secret. */
  serverJoinToken?: string;
}

/**
 * With --control-plane, fetches and decrypts the control-plane join
 * credential right after discovery, so that a wrong certificate key or a
 * missing upload stops the join before anything reaches the host.
 */
export async function verifyControlPlaneJoin(ctx: ControlPlaneJoinData, discovery: DiscoveryResult): Promise<void> {
  if (ctx.isControlPlane && !ctx.serverJoinToken) ctx.serverJoinToken = await fetchServerJoinToken(ctx, discovery);
}

/**
 * The server token for a joining k3s server, from the cluster: fetched with
 * the bootstrap token, decrypted with the certificate key, and rebuilt on
 * the CA that discovery verified.
 */
export async function fetchServerJoinToken(ctx: ControlPlaneJoinData, discovery: DiscoveryResult): Promise<string> {
  if (!ctx.certificateKey) {
    throw new ValidationError('join --control-plane needs --certificate-key', {
      code: 'E_FLAG_MISSING',
      hints: ['edgeadm init --control-plane-endpoint … --upload-certs prints it with the control-plane join command.'],
    });
  }
  const client = new KubeClient({
    server: discovery.server,
    caPem: discovery.caPem,
    token: formatBootstrapToken(ctx.token),
    contextName: 'bootstrap',
  });
  let secret: (KubeObject & { data?: Record<string, string> }) | undefined;
  try {
    secret = await client.get(secretPath);
  } catch {
    secret = undefined;
  }
  const sealed = secret?.data?.['server-token.sealed'];
  if (!secret || !sealed) {
    throw new EdgeadmError(
      `the cluster at ${discovery.server} has no control-plane join credential (kube-system/${CONTROL_PLANE_JOIN_SECRET}) that this token may read`,
      {
        code: 'E_CONTROL_PLANE_JOIN_MISSING',
        hints: [
          'Run "edgeadm init phase upload-certs --upload-certs --control-plane-endpoint …" on the first control plane; it prints a new --certificate-key.',
        ],
      },
    );
  }
  const expires = Date.parse(secret.metadata?.annotations?.[EXPIRES_ANNOTATION] ?? '');
  if (!(expires > Date.now())) {
    throw new EdgeadmError('the control-plane join credential has expired', {
      code: 'E_CONTROL_PLANE_JOIN_EXPIRED',
      hints: ['Upload it again: edgeadm init phase upload-certs --upload-certs on the first control plane.'],
    });
  }
  const serverToken = decryptWithCertificateKey(Buffer.from(sealed, 'base64').toString('utf8'), ctx.certificateKey);
  const parsed = parseK3sToken(serverToken);
  if (parsed.credentials.kind !== 'password') {
    throw new EdgeadmError('the uploaded control-plane join credential is not a k3s server token', {
      code: 'E_CONTROL_PLANE_JOIN_INVALID',
    });
  }
  // The hash comes from the CA this machine verified by pin, not from what the cluster stored.
  return buildK3sToken({
    caBundle: discovery.caPem,
    credentials: { username: parsed.credentials.username, password: parsed.credentials.password },
  });
}

/** What the phase needs from the join workflow. */
export interface ControlPlaneJoinDeps<C> {
  nodeName(ctx: C): string;
  discovery(ctx: C): Promise<DiscoveryResult>;
}

/** Makes join's control-plane-join phase (runs instead of node-join with --control-plane). */
export function controlPlaneJoinPhase<C extends ControlPlaneJoinData>(deps: ControlPlaneJoinDeps<C>): Phase<C> {
  return {
    name: 'control-plane-join',
    summary:
      'With --control-plane: start another control plane that joins the cluster (k3s: a server with the decrypted server token)',
    runIf: (ctx) => ctx.isControlPlane,
    async run(ctx): Promise<PhaseOutcome> {
      if (!ctx.facts) ctx.facts = await ctx.host.facts();
      const discovery = await deps.discovery(ctx);
      await verifyControlPlaneJoin(ctx, discovery);
      const joinToken = ctx.serverJoinToken!;
      const address = ctx.facts.addresses.find((a) => a.family === 'inet' && a.scope === 'global')?.address;
      if (!address) {
        throw new ValidationError(`cannot tell which address ${ctx.host.name} should advertise`, {
          code: 'E_NO_ADVERTISE_ADDRESS',
        });
      }
      const endpointHost = new URL(discovery.server).hostname;
      const config = ctx.distribution.renderServerConfig({
        nodeName: deps.nodeName(ctx),
        nodeLabels: {},
        advertiseAddress: address,
        certSans: [endpointHost],
        joinServer: discovery.server,
        joinToken,
      });
      const outcome = await configureAndStartService(ctx, config);
      if (ctx.isDryRun) {
        ctx.say(`Would wait for https://${address}:${ctx.distribution.apiPort}/readyz, verified with the cluster CA`);
        return outcome;
      }
      const client = new KubeClient({
        server: `https://${address}:${ctx.distribution.apiPort}`,
        caPem: discovery.caPem,
        contextName: 'new-control-plane',
      });
      await waitForApiReady(client, {
        timeoutMs: CONTROL_PLANE_READY_TIMEOUT_MS,
        pollMs: CONTROL_PLANE_READY_POLL_MS,
        what: 'the new control plane',
      });
      ctx.say(`${client.server} is ready (verified with the cluster CA)`);
      return outcome;
    },
  };
}
