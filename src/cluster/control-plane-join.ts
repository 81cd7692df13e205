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
 *
 * kubeadm uploads the certificates itself ({@link CertsUpload}): edgeadm
 * runs `kubeadm init phase upload-certs` with the key, which fills
 * kube-system/kubeadm-certs (each entry encrypted the same way) and the Role
 * that lets bootstrap tokens read it; edgeadm marks the Secret with its
 * expiry. A joining kubeadm control plane has the same check during
 * discovery (every entry decrypts with the key, and the CA in it is the one
 * discovery verified) before `kubeadm join` downloads them again itself.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { EdgeadmError, ValidationError } from '../errors.js';
import { execOrThrow } from '../hosts/host.js';
import { KubeClient, corePath, type KubeObject } from '../kube/client.js';
import { DEFAULT_BOOTSTRAP_TOKEN_GROUP, formatBootstrapToken, type BootstrapToken } from '../trust/bootstrap-token.js';
import { caPinsOfPem } from '../trust/ca-pin.js';
import type { DiscoveryResult } from '../trust/discovery.js';
import { buildK3sToken, parseK3sToken } from '../trust/k3s-token.js';
import type { Phase, PhaseOutcome } from '../workflow/phase.js';
import { waitForApiReady } from './api-ready.js';
import { readHostFile } from './host-files.js';
import type { CertsUpload, ServerConfigInput } from './distributions/distribution.js';
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

/** What the upload-certs phase needs from the init workflow. */
export interface UploadCertsDeps<C> {
  adminClient: (ctx: C) => Promise<KubeClient>;
  /** The control plane's configuration input (a distribution that uploads itself reads it with the key). */
  serverConfig: (ctx: C) => ServerConfigInput;
}

type SecretObject = KubeObject & { data?: Record<string, string> };

/** Makes init's upload-certs phase. */
export function uploadCertsPhase<C extends UploadCertsData>(deps: UploadCertsDeps<C>): Phase<C> {
  return {
    name: 'upload-certs',
    summary:
      'With --upload-certs: keep what another control plane needs in the cluster, encrypted with the certificate key (k3s: the server token; kubeadm: its kubeadm-certs)',
    runIf: (ctx) => ctx.isUploadCerts,
    async run(ctx) {
      const upload = ctx.distribution.certsUpload;
      const tokenPath = ctx.distribution.serverTokenPath;
      if (!upload && !tokenPath) {
        throw new ValidationError(`--upload-certs is not built for ${ctx.distribution.name} in this phase`, {
          code: 'E_NOT_BUILT',
        });
      }
      ctx.certificateKey ??= generateCertificateKey();
      if (upload) return uploadDistributionCerts(ctx, upload, deps);
      if (ctx.isDryRun) {
        ctx.say(
          `Would read ${tokenPath}, encrypt it with the certificate key and apply kube-system/${CONTROL_PLANE_JOIN_SECRET} (and the RBAC letting bootstrap tokens read it)`,
        );
        return 'unchanged';
      }
      const client = await deps.adminClient(ctx);
      const serverToken = (await readHostFile(ctx.host, tokenPath!)).trim();
      const existing = await client.get<SecretObject>(secretPath);
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

function certsSecretPath(upload: CertsUpload): string {
  return corePath('secrets', { namespace: 'kube-system', name: upload.secretName });
}

/**
 * Checks a distribution's uploaded-certificates Secret: every non-empty
 * entry decrypts with the key (kubeadm fails on the first that does not),
 * and the CA in it is `caPem`'s, so a key for another cluster's upload
 * cannot pass. Returns the names of the entries. Pure.
 *
 * @throws {EdgeadmError} `E_CERTIFICATE_KEY_MISMATCH` (another key),
 * `E_CONTROL_PLANE_JOIN_INVALID` (no CA entry, or another CA).
 */
export function verifyUploadedCerts(
  secret: SecretObject,
  options: { upload: CertsUpload; certificateKey: string; caPem: string },
): string[] {
  const entries = Object.entries(secret.data ?? {}).filter(([, value]) => value !== '');
  let ca: string | undefined;
  for (const [name, value] of entries) {
    // Every entry is decrypted, as kubeadm's download will; only the CA certificate is kept.
    const text = decryptWithCertificateKey(value, options.certificateKey);
    if (name === options.upload.caEntry) ca = text;
  }
  let isSameCa: boolean;
  try {
    const wanted = new Set(caPinsOfPem(options.caPem, 'the cluster CA'));
    isSameCa = ca !== undefined && caPinsOfPem(ca, 'the uploaded CA').some((pin) => wanted.has(pin));
  } catch {
    isSameCa = false;
  }
  if (!isSameCa) {
    throw new EdgeadmError(
      `kube-system/${options.upload.secretName} does not hold the cluster CA that discovery verified`,
      {
        code: 'E_CONTROL_PLANE_JOIN_INVALID',
        hints: [
          'Upload the certificates again on the first control plane: edgeadm init phase upload-certs --upload-certs …',
        ],
      },
    );
  }
  return entries.map(([name]) => name);
}

/** When the upload expires: its owner bootstrap token's expiration (kubeadm ties the Secret to one), else the usual TTL. */
async function uploadExpiry(client: KubeClient, upload: CertsUpload): Promise<Date> {
  const secret = await client.get<SecretObject>(certsSecretPath(upload));
  const owners = (secret?.metadata?.ownerReferences ?? []) as Array<{ kind?: string; name?: string }>;
  const owner = owners.find((ref) => ref.kind === 'Secret' && ref.name?.startsWith('bootstrap-token-'));
  if (owner?.name) {
    const token = await client.get<SecretObject>(corePath('secrets', { namespace: 'kube-system', name: owner.name }));
    const expiration = Date.parse(Buffer.from(token?.data?.expiration ?? '', 'base64').toString('utf8'));
    if (expiration > 0) return new Date(expiration);
  }
  return new Date(Date.now() + CONTROL_PLANE_JOIN_TTL_MS);
}

/**
 * The upload by a distribution that does it itself (kubeadm): unless the
 * Secret already holds the certificates under this key with more than half
 * its life left, write the upload configuration (with the key, mode 0600),
 * run the upload, remove the file, and mark the Secret with its expiry.
 */
async function uploadDistributionCerts<C extends UploadCertsData>(
  ctx: C,
  upload: CertsUpload,
  deps: UploadCertsDeps<C>,
): Promise<PhaseOutcome> {
  const { host, distribution } = ctx;
  const certificateKey = ctx.certificateKey!;
  if (ctx.isDryRun) {
    ctx.say(
      `Would write ${upload.configPath} (mode 0600, with the certificate key), run ${upload.command.command}, then remove ${upload.configPath}`,
    );
    ctx.say(`Would mark kube-system/${upload.secretName} with its expiry (${EXPIRES_ANNOTATION})`);
    return 'unchanged';
  }
  const client = await deps.adminClient(ctx);
  const existing = await client.get<SecretObject>(certsSecretPath(upload));
  const expires = Date.parse(existing?.metadata?.annotations?.[EXPIRES_ANNOTATION] ?? '');
  if (existing && expires - Date.now() > CONTROL_PLANE_JOIN_TTL_MS / 2) {
    try {
      const caPem = await readHostFile(host, distribution.caPath);
      verifyUploadedCerts(existing, { upload, certificateKey, caPem });
      ctx.say(`kube-system/${upload.secretName} already holds the certificates, encrypted with this certificate key`);
      return 'unchanged';
    } catch {
      // Another key (or another CA): upload again with this one.
    }
  }
  const config = distribution.renderServerConfig({ ...deps.serverConfig(ctx), certificateKey });
  ctx.state.file(upload.configPath);
  await ctx.state.save();
  await host.put(Buffer.from(config), upload.configPath, {
    mode: 0o600,
    sudo: true,
    description: `write ${upload.configPath} for the upload (it holds the certificate key)`,
  });
  try {
    await execOrThrow(host, upload.command.command, {
      sudo: true,
      timeoutMs: upload.command.timeoutMs,
      description: upload.command.description,
    });
  } finally {
    await host.exec(`rm -f '${upload.configPath}'`, { sudo: true, description: `remove ${upload.configPath}` });
  }
  const expiresAt = await uploadExpiry(client, upload);
  await client.mergePatch(certsSecretPath(upload), {
    metadata: { annotations: { [EXPIRES_ANNOTATION]: expiresAt.toISOString() } },
  });
  ctx.say(
    `${distribution.name} uploaded the certificates to kube-system/${upload.secretName}, encrypted with the certificate key (usable until ${expiresAt.toISOString()})`,
  );
  return 'changed';
}

/** What the control-plane-join phase needs of join. */
export interface ControlPlaneJoinData extends NodeData {
  isControlPlane: boolean;
  token: BootstrapToken;
  certificateKey?: string;
  /**
   * What the joining control plane joins with, once the upload was fetched
   * and decrypted: k3s, the server token; kubeadm, the bootstrap token
   * (kubeadm-certs verified). A secret.
   */
  serverJoinToken?: string;
}

/**
 * With --control-plane, fetches and decrypts the control-plane join
 * credential right after discovery, so that a wrong certificate key or a
 * missing upload stops the join before anything reaches the host.
 */
export async function verifyControlPlaneJoin(ctx: ControlPlaneJoinData, discovery: DiscoveryResult): Promise<void> {
  if (!ctx.isControlPlane || ctx.serverJoinToken) return;
  const upload = ctx.distribution.certsUpload;
  if (upload) {
    await fetchUploadedCerts(ctx, discovery, upload);
    ctx.serverJoinToken = formatBootstrapToken(ctx.token);
  } else {
    ctx.serverJoinToken = await fetchServerJoinToken(ctx, discovery);
  }
}

function requireCertificateKey(ctx: ControlPlaneJoinData): string {
  if (!ctx.certificateKey) {
    throw new ValidationError('join --control-plane needs --certificate-key', {
      code: 'E_FLAG_MISSING',
      hints: ['edgeadm init --control-plane-endpoint … --upload-certs prints it with the control-plane join command.'],
    });
  }
  return ctx.certificateKey;
}

/** Reads a kube-system Secret with the bootstrap token; undefined when it is missing or not readable. */
async function readWithBootstrapToken(
  ctx: ControlPlaneJoinData,
  discovery: DiscoveryResult,
  name: string,
): Promise<SecretObject | undefined> {
  const client = new KubeClient({
    server: discovery.server,
    caPem: discovery.caPem,
    token: formatBootstrapToken(ctx.token),
    contextName: 'bootstrap',
  });
  try {
    return await client.get<SecretObject>(corePath('secrets', { namespace: 'kube-system', name }));
  } catch {
    return undefined;
  }
}

function missingUpload(server: string, name: string): EdgeadmError {
  return new EdgeadmError(
    `the cluster at ${server} has no control-plane join credential (kube-system/${name}) that this token may read`,
    {
      code: 'E_CONTROL_PLANE_JOIN_MISSING',
      hints: [
        'It may have expired (uploads last 2 hours). Run "edgeadm init phase upload-certs --upload-certs --control-plane-endpoint …" on the first control plane; it prints a new --certificate-key.',
      ],
    },
  );
}

function checkNotExpired(secret: SecretObject): void {
  const expires = Date.parse(secret.metadata?.annotations?.[EXPIRES_ANNOTATION] ?? '');
  if (!(expires > Date.now())) {
    throw new EdgeadmError('the control-plane join credential has expired', {
      code: 'E_CONTROL_PLANE_JOIN_EXPIRED',
      hints: ['Upload it again: edgeadm init phase upload-certs --upload-certs on the first control plane.'],
    });
  }
}

/**
 * For a distribution that uploads itself (kubeadm): fetches its Secret with
 * the bootstrap token and checks it with {@link verifyUploadedCerts}. The
 * decrypted keys are dropped; the distribution's own join fetches them.
 */
async function fetchUploadedCerts(
  ctx: ControlPlaneJoinData,
  discovery: DiscoveryResult,
  upload: CertsUpload,
): Promise<void> {
  const certificateKey = requireCertificateKey(ctx);
  const secret = await readWithBootstrapToken(ctx, discovery, upload.secretName);
  if (!secret?.data || Object.keys(secret.data).length === 0) throw missingUpload(discovery.server, upload.secretName);
  // Without edgeadm's mark the expiry is unknown; kubeadm's own cleanup then decides.
  if (secret.metadata?.annotations?.[EXPIRES_ANNOTATION] !== undefined) checkNotExpired(secret);
  verifyUploadedCerts(secret, { upload, certificateKey, caPem: discovery.caPem });
}

/**
 * The server token for a joining k3s server, from the cluster: fetched with
 * the bootstrap token, decrypted with the certificate key, and rebuilt on
 * the CA that discovery verified.
 */
export async function fetchServerJoinToken(ctx: ControlPlaneJoinData, discovery: DiscoveryResult): Promise<string> {
  const certificateKey = requireCertificateKey(ctx);
  const secret = await readWithBootstrapToken(ctx, discovery, CONTROL_PLANE_JOIN_SECRET);
  const sealed = secret?.data?.['server-token.sealed'];
  if (!secret || !sealed) throw missingUpload(discovery.server, CONTROL_PLANE_JOIN_SECRET);
  checkNotExpired(secret);
  const serverToken = decryptWithCertificateKey(Buffer.from(sealed, 'base64').toString('utf8'), certificateKey);
  const parsed = parseK3sToken(serverToken);
  if (parsed.credentials.kind !== 'password') {
    throw new EdgeadmError('the uploaded control-plane join credential is not a k3s server token', {
      code: 'E_CONTROL_PLANE_JOIN_INVALID',
    });
  }
  // The hash comes from the CA this machine verified by pin, not from what the cluster stored,
  // and from the bytes k3s serves at /cacerts when discovery read them: those are what k3s hashes.
  return buildK3sToken({
    caBundle: discovery.servedCaBundle ?? discovery.caPem,
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
      'With --control-plane: start another control plane that joins the cluster (k3s: a server with the decrypted server token; kubeadm: kubeadm join with the certificate key)',
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
        caPem: discovery.caPem,
        // A distribution that uploads itself downloads with the key too; k3s has its token already.
        ...(ctx.distribution.certsUpload && ctx.certificateKey ? { certificateKey: ctx.certificateKey } : {}),
      });
      const outcome = await configureAndStartService(ctx, config);
      if (ctx.isDryRun) {
        ctx.say(`Would wait for https://${address}:${ctx.distribution.apiPort}/readyz, verified with the cluster CA`);
        return outcome;
      }
      // With the bootstrap token: an API server that refuses anonymous requests
      // (k3s) answers /readyz only to authenticated callers, and every
      // authenticated caller may read it (system:public-info-viewer).
      const client = new KubeClient({
        server: `https://${address}:${ctx.distribution.apiPort}`,
        caPem: discovery.caPem,
        token: formatBootstrapToken(ctx.token),
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
