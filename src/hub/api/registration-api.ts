/**
 * The agents' side of the operator API: the discovery document
 * (`kube-public/cluster-info`, signed for each usable hub token), and
 * `POST /hub/v1/register` and `/hub/v1/renew`, where a hub token holder
 * registers a cluster and an agent renews its client certificate.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { parseBootstrapToken } from '../../trust/bootstrap-token.js';
import { clusterInfoConfigMap } from '../../trust/cluster-info.js';
import { renderClusterInfoKubeconfig } from '../../trust/kubeconfig.js';
import { describeCsr, signCsr } from '../../trust/pki.js';
import { isWithinValidity } from '../identity/client-certificate.js';
import type { HubContext } from './hub-context.js';
import { formatTokenLabelLimit, labelsOutsideLimit } from '../identity/token-labels.js';
import { secretsEqual } from '../identity/hub-tokens.js';
import { hubTokenState } from '../store/hub-token-state.js';
import { bearerToken, HttpError, readJsonBody, sendJson } from '../http/http-replies.js';
import { isClusterName, labelProblem } from '../../kube/names.js';
import { AGENT_CERT_VALIDITY_DAYS, MAX_API_BODY_BYTES } from '../limits.js';
import { AGENT_CERT_ORGANIZATION } from '../contract/agent-certificate.js';

/**
 * The labels of a registration: a JSON object of Kubernetes label keys to
 * label values (they are matched by selectors and shown by `hub clusters`).
 */
function labelsOf(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new HttpError(400, 'E_HUB_BAD_REQUEST', 'labels must be a JSON object of label keys to label values');
  }
  const problem = labelProblem(value as Record<string, unknown>);
  if (problem !== undefined) throw new HttpError(400, 'E_LABELS_INVALID', problem);
  return { ...(value as Record<string, string>) };
}

/** Serves the discovery document: the hub's address and CA, signed for each usable token. */
export async function discovery(context: HubContext, res: ServerResponse): Promise<void> {
  const now = context.now();
  const tokens = (await context.store.listTokens())
    .filter((token) => hubTokenState(token, now) === 'usable')
    .map((token) => ({ id: token.id, secret: token.secret }));
  const kubeconfig = renderClusterInfoKubeconfig({ server: context.advertiseUrl, caPem: context.pki.ca.certPem });
  sendJson(res, 200, clusterInfoConfigMap({ kubeconfig, tokens }));
}

function serialOf(certPem: string): { serial: string; notAfter: string } {
  const certificate = new X509Certificate(certPem);
  return { serial: certificate.serialNumber.toLowerCase(), notAfter: new Date(certificate.validTo).toISOString() };
}

/** Checks a CSR for a cluster and signs it. */
async function signClusterCsr(context: HubContext, cluster: string, csrPem: unknown): Promise<string> {
  if (typeof csrPem !== 'string') throw new HttpError(400, 'E_HUB_BAD_REQUEST', 'csr is missing');
  let info;
  try {
    info = describeCsr(csrPem);
  } catch (error) {
    throw new HttpError(400, 'E_CSR_INVALID', (error as Error).message);
  }
  if (info.commonName !== cluster || info.organizations.join(',') !== AGENT_CERT_ORGANIZATION) {
    throw new HttpError(
      400,
      'E_CSR_SUBJECT',
      `the certificate request must name CN=${cluster}, O=${AGENT_CERT_ORGANIZATION}`,
    );
  }
  if (info.dnsNames.length > 0 || info.ipAddresses.length > 0) {
    throw new HttpError(400, 'E_CSR_SUBJECT', 'an agent certificate request must not ask for alternative names');
  }
  try {
    return (await signCsr({ ca: context.pki.ca, csrPem, usages: ['client'], validityDays: AGENT_CERT_VALIDITY_DAYS }))
      .certPem;
  } catch (error) {
    throw new HttpError(400, 'E_CSR_INVALID', (error as Error).message);
  }
}

/** The answer to a hub token found unusable (expired, spent or unknown). */
function unusableToken(tokenId: string, use: 'expired' | 'spent' | 'unknown'): HttpError {
  switch (use) {
    case 'expired':
      return new HttpError(401, 'E_HUB_TOKEN_EXPIRED', `hub token "${tokenId}" has expired`);
    case 'spent':
      return new HttpError(401, 'E_HUB_TOKEN_SPENT', `hub token "${tokenId}" has no registrations left`);
    case 'unknown':
      return new HttpError(401, 'E_HUB_TOKEN_UNKNOWN', `hub token "${tokenId}" is not valid on this hub`);
  }
}

/**
 * `POST /hub/v1/register`: a hub token holder registers a cluster and gets
 * its client certificate.
 *
 * Everything the request carries (name, labels, CSR) is checked, and the
 * certificate signed, before the token is touched; then one store
 * transaction takes a token use and adds the cluster, or does neither. So a
 * refused registration never spends a use, and of two registrations racing
 * for a token's last use exactly one wins.
 */
export async function register(context: HubContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const presented = bearerToken(req);
  let tokenId: string;
  let tokenSecret: string;
  try {
    ({ id: tokenId, secret: tokenSecret } = parseBootstrapToken(presented ?? ''));
  } catch {
    context.metrics.unauthorizedRequests.inc();
    throw new HttpError(401, 'E_HUB_UNAUTHORIZED', 'a hub token is required');
  }
  const stored = await context.store.getToken(tokenId);
  if (stored === undefined || !secretsEqual(stored.secret, tokenSecret)) {
    context.metrics.unauthorizedRequests.inc();
    throw new HttpError(401, 'E_HUB_TOKEN_UNKNOWN', `hub token "${tokenId}" is not valid on this hub`);
  }
  // Answer a dead token before any CSR work; the spend below checks again, atomically.
  const state = hubTokenState(stored, context.now());
  if (state !== 'usable') throw unusableToken(tokenId, state);
  const body = await readJsonBody(req, MAX_API_BODY_BYTES);
  const name = body.name;
  if (typeof name !== 'string' || !isClusterName(name)) {
    throw new HttpError(400, 'E_HUB_CLUSTER_NAME', 'the cluster name must be a DNS label (a-z, 0-9, -; at most 63)');
  }
  const labels = labelsOf(body.labels);
  const outside = stored.labels === undefined ? undefined : labelsOutsideLimit(labels, stored.labels);
  if (outside !== undefined) {
    context.logger.warn(`registration of cluster ${name} with token ${tokenId} refused: ${outside}`);
    throw new HttpError(
      403,
      'E_HUB_TOKEN_LABELS',
      `hub token "${tokenId}" cannot register cluster "${name}" with these labels: ${outside} ` +
        `(it allows ${formatTokenLabelLimit(stored.labels ?? {})})`,
    );
  }
  if (await context.store.getCluster(name)) {
    throw new HttpError(
      409,
      'E_HUB_CLUSTER_EXISTS',
      `a cluster named "${name}" is already registered; delete it first`,
    );
  }
  const certPem = await signClusterCsr(context, name, body.csr);
  const { serial, notAfter } = serialOf(certPem);
  const outcome = await context.store.useTokenToAddCluster(tokenId, context.now(), {
    name,
    labels,
    certSerial: serial,
    certNotAfter: notAfter,
    registeredAt: context.now().toISOString(),
  });
  if (outcome !== 'added') {
    // The certificate was never sent; revoke it all the same, so that no copy of it can ever serve.
    await context.store.revokeCertificate(serial, 'registration refused');
    if (outcome === 'exists') {
      throw new HttpError(409, 'E_HUB_CLUSTER_EXISTS', `a cluster named "${name}" is already registered`);
    }
    throw unusableToken(tokenId, outcome);
  }
  context.logger.info(`registered cluster ${name} with token ${tokenId}`);
  context.rollouts?.clustersChanged();
  sendJson(res, 201, { name, certPem, caPem: context.pki.ca.certPem, server: context.advertiseUrl });
}

/** `POST /hub/v1/renew`: an agent trades its (valid) certificate for a new one. */
export async function renew(context: HubContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const socket = req.socket as TLSSocket;
  const peer = typeof socket.getPeerCertificate === 'function' ? socket.getPeerCertificate() : undefined;
  if (!socket.authorized || !peer || !peer.subject) {
    throw new HttpError(401, 'E_HUB_UNAUTHORIZED', 'renewal needs the cluster client certificate');
  }
  // A resumed TLS session does not check the validity period again.
  if (!isWithinValidity(peer)) {
    throw new HttpError(401, 'E_HUB_UNAUTHORIZED', 'this certificate is expired or not yet valid');
  }
  const cluster = await context.store.getCluster(String(peer.subject.CN));
  const serial = peer.serialNumber.toLowerCase();
  if (cluster === undefined || (await context.store.isCertificateRevoked(serial))) {
    throw new HttpError(401, 'E_HUB_UNAUTHORIZED', 'this certificate is revoked or its cluster is gone');
  }
  const body = await readJsonBody(req, MAX_API_BODY_BYTES);
  const certPem = await signClusterCsr(context, cluster.name, body.csr);
  const renewed = serialOf(certPem);
  await context.store.updateClusterCertificate(cluster.name, renewed.serial, renewed.notAfter);
  await context.store.revokeCertificate(serial, 'renewed');
  context.logger.info(`renewed the certificate of cluster ${cluster.name}`);
  sendJson(res, 200, { certPem });
}
