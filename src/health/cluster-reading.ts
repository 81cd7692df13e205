/**
 * What the agent reads of its own cluster for the health report, as itself
 * (never as a hub user): the nodes and their readiness (`list nodes`, the
 * one cluster-wide read right the agent's RBAC gives beyond impersonation),
 * the Kubernetes version, the expiry of the cluster CA it trusts and of the
 * serving certificate its API server presents, and the installed-package
 * record (installed-package.ts). Each part is best effort: what cannot be
 * read is left out of the report, never guessed.
 */
import { connect, type PeerCertificate } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { parsePemCertificates } from '../trust/pem.js';
import { installedPackageOf, INSTALLED_PACKAGE_PATH } from './installed-package.js';
import {
  MAX_HEALTH_TEXT,
  MAX_NOT_READY_NAMES,
  MAX_REPORTED_CERTIFICATES,
  type CertificateExpiryView,
  type InstalledPackageView,
  type NodeHealthView,
} from './wire.js';

/** Nodes listed per page. */
export const NODE_PAGE_SIZE = 500;
/** Most pages read: beyond 10,000 nodes the count is not reported rather than wrong. */
export const MAX_NODE_PAGES = 20;
/** Deadline of the TLS connection that reads the API server's serving certificate. */
export const SERVING_CERT_TIMEOUT_MS = 10_000;

/** What the reading needs of the agent's upstream. */
export interface HealthSource {
  /** GETs a path as the agent itself; rejects on any status but 2xx, naming it. */
  getJson(path: string): Promise<unknown>;
  /** The API server's address and the CA the agent trusts for it. */
  credentials: { server: string; caPem?: string | undefined; isInsecureSkipTlsVerify: boolean };
}

interface NodeItem {
  metadata?: { name?: unknown };
  status?: { conditions?: { type?: unknown; status?: unknown }[] };
}

function isReady(node: NodeItem): boolean {
  return (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** Counts one page of a node list into `into`. Pure. */
export function countNodes(into: NodeHealthView, list: unknown): string | undefined {
  const page = list as { items?: unknown; metadata?: { continue?: unknown } } | null;
  if (!Array.isArray(page?.items)) throw new Error('the node list has no items');
  for (const node of page.items as NodeItem[]) {
    into.total += 1;
    if (isReady(node)) into.ready += 1;
    else if (into.notReady.length < MAX_NOT_READY_NAMES) {
      const name = node.metadata?.name;
      if (typeof name === 'string' && name.length > 0 && name.length <= MAX_HEALTH_TEXT) into.notReady.push(name);
    }
  }
  const next = page.metadata?.continue;
  return typeof next === 'string' && next !== '' ? next : undefined;
}

/** Lists every node, a page at a time. */
export async function readNodes(source: HealthSource): Promise<NodeHealthView> {
  const nodes: NodeHealthView = { total: 0, ready: 0, notReady: [] };
  let next: string | undefined;
  for (let page = 0; page < MAX_NODE_PAGES; page += 1) {
    const query = `limit=${NODE_PAGE_SIZE}${next === undefined ? '' : `&continue=${encodeURIComponent(next)}`}`;
    next = countNodes(nodes, await source.getJson(`/api/v1/nodes?${query}`));
    if (next === undefined) return nodes;
  }
  throw new Error(`the cluster has more than ${MAX_NODE_PAGES * NODE_PAGE_SIZE} nodes`);
}

function subjectOf(certificate: X509Certificate): string {
  const subject = certificate.subject.replace(/\n/g, ', ');
  return subject.length > MAX_HEALTH_TEXT ? `${subject.slice(0, MAX_HEALTH_TEXT - 1)}…` : subject || '(no subject)';
}

/** The expiry entry of one certificate. Pure. */
export function expiryOf(kind: CertificateExpiryView['kind'], certificate: X509Certificate): CertificateExpiryView {
  return { kind, subject: subjectOf(certificate), notAfter: new Date(certificate.validTo).toISOString() };
}

/** The CA certificates the agent trusts for its API server (none under the system's roots). Pure. */
export function caExpiries(caPem: string | undefined): CertificateExpiryView[] {
  if (caPem === undefined || caPem.trim() === '') return [];
  return parsePemCertificates(caPem, 'the upstream CA').map(({ certificate }) => expiryOf('cluster-ca', certificate));
}

/**
 * The certificate the API server presents, read from one TLS handshake
 * (verified with the agent's CA, as every request is; unverified only when
 * the agent's kubeconfig itself skips verification). Bounded by a deadline.
 */
export function readServingCertificate(
  source: HealthSource,
  timeoutMs = SERVING_CERT_TIMEOUT_MS,
): Promise<X509Certificate> {
  const url = new URL(source.credentials.server);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const isAddress = /^[\d.:]+$/.test(host);
  return new Promise((resolve, reject) => {
    const socket = connect({
      host,
      port: Number(url.port || 443),
      ...(isAddress ? {} : { servername: host }),
      ...(source.credentials.caPem === undefined ? {} : { ca: source.credentials.caPem }),
      rejectUnauthorized: !source.credentials.isInsecureSkipTlsVerify,
      ALPNProtocols: ['http/1.1'],
    });
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error('the TLS handshake timed out')));
    socket.once('secureConnect', () => {
      const peer: PeerCertificate = socket.getPeerCertificate();
      socket.destroy();
      if (peer.raw === undefined) reject(new Error('the API server presented no certificate'));
      else resolve(new X509Certificate(peer.raw));
    });
    socket.once('error', reject);
  });
}

/**
 * The certificates' expiries: the CA, then the serving certificate, within
 * the report's bound. What cannot be read is left out and told to `onError`.
 */
export async function readCertificates(
  source: HealthSource,
  onError: (what: string, error: Error) => void,
): Promise<CertificateExpiryView[]> {
  const expiries: CertificateExpiryView[] = [];
  try {
    expiries.push(...caExpiries(source.credentials.caPem));
  } catch (error) {
    onError('the cluster CA', error as Error);
  }
  try {
    expiries.push(expiryOf('apiserver-serving', await readServingCertificate(source)));
  } catch (error) {
    onError("the API server's serving certificate", error as Error);
  }
  return expiries.slice(0, MAX_REPORTED_CERTIFICATES);
}

/** The installed-package record, or undefined when the cluster has none (404). */
export async function readInstalledPackage(source: HealthSource): Promise<InstalledPackageView | undefined> {
  try {
    return installedPackageOf(await source.getJson(INSTALLED_PACKAGE_PATH));
  } catch (error) {
    if (/HTTP 404\b/.test((error as Error).message)) return undefined;
    throw error;
  }
}
