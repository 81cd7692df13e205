/**
 * `hub certs check`: every certificate the fleet depends on, soonest expiry
 * first: the hub's own (its CA, as the hub config pins it, and the serving
 * certificate it presents), each cluster's agent certificate for the hub
 * (its agent renews it online: EXPIRING only once that renewal is overdue,
 * {@link AGENT_CERT_RENEWAL_DAYS} before it expires), and what each cluster's agent
 * last reported of its cluster (its CA and its API server's serving
 * certificate). Pure, but for reading the hub's serving certificate.
 */
import type { X509Certificate } from 'node:crypto';
import { readServingCertificate } from '../health/cluster-reading.js';
import type { HubConfig } from '../hub/contract/hub-config.js';
import type { ClusterView } from '../hub/contract/views.js';
import { parsePemCertificates } from '../trust/pem.js';
import { columns } from './columns.js';
import { AGENT_CERT_RENEWAL_DAYS } from '../hub/limits.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Which certificate a row is about. */
export type CertificateRowKind = 'hub-ca' | 'hub-serving' | 'hub-client' | 'cluster-ca' | 'apiserver-serving';

/** Where a certificate stands against the window. */
export type ExpiryStatus = 'ok' | 'expiring' | 'expired';

/** One certificate of the report. */
export interface CertificateRow {
  /** The cluster it belongs to; absent for the hub's own. */
  cluster?: string;
  kind: CertificateRowKind;
  subject?: string;
  notAfter: string;
  /** Whole days left (negative once expired). */
  daysLeft: number;
  status: ExpiryStatus;
  /** When the cluster's agent reported it (absent for what the hub knows itself). */
  reportedAt?: string;
}

/** The hub's own certificates, as this machine sees them. */
export interface HubCertificates {
  ca: X509Certificate;
  serving: X509Certificate;
}

/** Reads the hub's CA from the config and its serving certificate from one verified handshake. */
export async function readHubCertificates(config: HubConfig): Promise<HubCertificates> {
  const [ca] = parsePemCertificates(config.caPem, 'the hub config');
  const serving = await readServingCertificate({
    getJson: () => Promise.reject(new Error('not used')),
    credentials: { server: config.server, caPem: config.caPem, isInsecureSkipTlsVerify: false },
  });
  return { ca: ca!.certificate, serving };
}

function rowOf(fields: Omit<CertificateRow, 'daysLeft' | 'status'>, now: Date, withinDays: number): CertificateRow {
  const left = Date.parse(fields.notAfter) - now.getTime();
  if (fields.kind === 'hub-client') withinDays = Math.min(withinDays, AGENT_CERT_RENEWAL_DAYS);
  const status: ExpiryStatus = left <= 0 ? 'expired' : left <= withinDays * DAY_MS ? 'expiring' : 'ok';
  return { ...fields, daysLeft: Math.floor(left / DAY_MS), status };
}

/** Every row, soonest expiry first (then by cluster and kind). */
export function certificateReport(options: {
  clusters: readonly ClusterView[];
  hub?: HubCertificates;
  now: Date;
  withinDays: number;
}): CertificateRow[] {
  const { now, withinDays } = options;
  const rows: CertificateRow[] = [];
  if (options.hub !== undefined) {
    for (const [kind, certificate] of [
      ['hub-ca', options.hub.ca],
      ['hub-serving', options.hub.serving],
    ] as const) {
      const subject = certificate.subject.replace(/\n/g, ', ');
      rows.push(rowOf({ kind, subject, notAfter: new Date(certificate.validTo).toISOString() }, now, withinDays));
    }
  }
  for (const cluster of options.clusters) {
    rows.push(rowOf({ cluster: cluster.name, kind: 'hub-client', notAfter: cluster.certNotAfter }, now, withinDays));
    for (const reported of cluster.health?.certificates ?? []) {
      const { kind, subject, notAfter } = reported;
      const reportedAt = cluster.health!.reportedAt;
      rows.push(rowOf({ cluster: cluster.name, kind, subject, notAfter, reportedAt }, now, withinDays));
    }
  }
  const name = (row: CertificateRow): string => row.cluster ?? '';
  return rows.sort(
    (a, b) =>
      Date.parse(a.notAfter) - Date.parse(b.notAfter) || name(a).localeCompare(name(b)) || a.kind.localeCompare(b.kind),
  );
}

/** The human table: the hub's own rows named `(hub)`. */
export function renderCertificateTable(rows: readonly CertificateRow[]): string {
  if (rows.length === 0) return 'No certificates to check.';
  return columns([
    ['CLUSTER', 'CERTIFICATE', 'EXPIRES', 'DAYS LEFT', 'STATUS', 'SUBJECT'],
    ...rows.map((row) => [
      row.cluster ?? '(hub)',
      row.kind,
      row.notAfter.slice(0, 10),
      String(row.daysLeft),
      row.status.toUpperCase(),
      row.subject ?? '-',
    ]),
  ]);
}
