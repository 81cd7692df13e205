/**
 * What a cluster's agent tells the hub about its cluster's health, and how:
 * the contract both ends build on (the hub's views re-export the types).
 *
 * The hub opens one `GET` {@link HEALTH_PATH} on each tunnel it accepts; the
 * agent answers 200 and writes one JSON {@link ClusterHealthReport} per line:
 * one at once, then one whenever what it reads changes, and at least every
 * {@link HEALTH_REPORT_REFRESH_MS} as a sign of life. The agent reads its
 * cluster every {@link HEALTH_READ_INTERVAL_MS} (nodes) and its
 * certificates and installed package every {@link HEALTH_SLOW_READ_INTERVAL_MS}.
 *
 * Control streams carry no identity headers (tunnel/protocol.ts), so a
 * user's stream can never reach this path; the hub reads each line as
 * untrusted input ({@link parseHealthReport}): bounded, typed, or dropped.
 */

/** Hub to agent: `GET`, opened once after the welcome; answered 200 with JSON lines. */
export const HEALTH_PATH = '/.edgeadm/health';
/** How often the agent lists its nodes. */
export const HEALTH_READ_INTERVAL_MS = 15_000;
/**
 * The variable edgeadm's own tests set to read the nodes more often than
 * {@link HEALTH_READ_INTERVAL_MS}, so that their waits for a change are not
 * spent in real time. Not for operators: nothing else reads it.
 */
export const TEST_HEALTH_READ_ENV = 'EDGEADM_TEST_HEALTH_READ_MS';
/** Shortest read period the test variable may set (the agent must not spin on its API server). */
export const MIN_TEST_HEALTH_READ_MS = 100;
/** How often the agent reads its certificates and the installed package (they change rarely). */
export const HEALTH_SLOW_READ_INTERVAL_MS = 10 * 60_000;
/** The longest the agent stays silent on the stream when nothing changed. */
export const HEALTH_REPORT_REFRESH_MS = 5 * 60_000;
/** Longest report line either end writes or reads. */
export const MAX_HEALTH_LINE_BYTES = 16 * 1024;
/** Most node names a report lists as not Ready. */
export const MAX_NOT_READY_NAMES = 20;
/** Most certificates a report lists. */
export const MAX_REPORTED_CERTIFICATES = 8;
/** Longest text field (a name, a subject, a version) a report carries. */
export const MAX_HEALTH_TEXT = 256;

/** Which certificate an expiry is about. */
export type CertificateKind =
  /** The cluster's CA, as the agent's upstream trusts it. */
  | 'cluster-ca'
  /** The serving certificate the cluster's API server presents. */
  | 'apiserver-serving'
  /** The agent's own client certificate for the hub (the hub knows it: `certNotAfter`). */
  | 'hub-client';

const CERTIFICATE_KINDS: readonly CertificateKind[] = ['cluster-ca', 'apiserver-serving', 'hub-client'];

/** A certificate's subject and expiry, as read where it is used. */
export interface CertificateExpiryView {
  kind: CertificateKind;
  subject: string;
  notAfter: string;
}

/** The install package a cluster was installed or last upgraded from, as `init` and `upgrade` record it in the cluster. */
export interface InstalledPackageView {
  name: string;
  version: string;
  distribution: string;
  /** SHA-256 (hex) of the package's manifest.json: every installed byte is listed there. */
  manifestSha256: string;
  /** The signing key's fingerprint (`sha256:` of its DER public key) when the package was verified against a pinned key. */
  signer?: string;
  /** The step that installed it. */
  action: 'init' | 'upgrade';
  at: string;
}

/** The nodes of a cluster, as its agent lists them. */
export interface NodeHealthView {
  total: number;
  ready: number;
  /** The names of nodes not Ready, at most {@link MAX_NOT_READY_NAMES}. */
  notReady: string[];
}

/** One line of the health stream: what the agent could read, each part best effort. */
export interface ClusterHealthReport {
  /** Absent when the agent could not list nodes (for example no right to). */
  nodes?: NodeHealthView;
  kubernetesVersion?: string;
  certificates: CertificateExpiryView[];
  /** Absent when the cluster has no record of its package (installed without edgeadm, or before it kept one). */
  package?: InstalledPackageView;
}

/**
 * What the hub keeps of a cluster's health: the last report, with when the
 * hub read it (its clock, not the agent's), kept across disconnects.
 */
export interface ClusterHealthView extends ClusterHealthReport {
  reportedAt: string;
}

type Fields = Record<string, unknown>;

function isFields(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_HEALTH_TEXT) {
    throw new Error(`${what} must be text of 1 to ${MAX_HEALTH_TEXT} characters`);
  }
  return value;
}

function time(value: unknown, what: string): string {
  const written = text(value, what);
  if (Number.isNaN(Date.parse(written))) throw new Error(`${what} must be a time (ISO 8601)`);
  return new Date(written).toISOString();
}

function count(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new Error(`${what} must be a whole number`);
  }
  return value;
}

function nodesOf(value: unknown): NodeHealthView {
  if (!isFields(value)) throw new Error('nodes must be an object');
  const total = count(value.total, 'nodes.total');
  const ready = count(value.ready, 'nodes.ready');
  if (ready > total) throw new Error('nodes.ready is more than nodes.total');
  const names = value.notReady;
  if (!Array.isArray(names) || names.length > MAX_NOT_READY_NAMES) {
    throw new Error(`nodes.notReady must be a list of at most ${MAX_NOT_READY_NAMES} names`);
  }
  return { total, ready, notReady: names.map((name, index) => text(name, `nodes.notReady[${index}]`)) };
}

function certificateOf(value: unknown, index: number): CertificateExpiryView {
  const what = `certificates[${index}]`;
  if (!isFields(value)) throw new Error(`${what} must be an object`);
  if (!CERTIFICATE_KINDS.includes(value.kind as CertificateKind) || value.kind === 'hub-client') {
    throw new Error(`${what}.kind must be cluster-ca or apiserver-serving`);
  }
  return {
    kind: value.kind as CertificateKind,
    subject: text(value.subject, `${what}.subject`),
    notAfter: time(value.notAfter, `${what}.notAfter`),
  };
}

function packageOf(value: unknown): InstalledPackageView {
  if (!isFields(value)) throw new Error('package must be an object');
  if (value.action !== 'init' && value.action !== 'upgrade') throw new Error('package.action must be init or upgrade');
  const sha = text(value.manifestSha256, 'package.manifestSha256');
  if (!/^[0-9a-f]{64}$/.test(sha)) throw new Error('package.manifestSha256 must be 64 hex digits');
  const installed: InstalledPackageView = {
    name: text(value.name, 'package.name'),
    version: text(value.version, 'package.version'),
    distribution: text(value.distribution, 'package.distribution'),
    manifestSha256: sha,
    action: value.action,
    at: time(value.at, 'package.at'),
  };
  if (value.signer !== undefined) {
    const signer = text(value.signer, 'package.signer');
    if (!/^sha256:[0-9a-f]{64}$/.test(signer)) throw new Error('package.signer must be sha256: and 64 hex digits');
    installed.signer = signer;
  }
  return installed;
}

/**
 * One report line as the hub reads it: every field typed and bounded, the
 * times rewritten in one format, anything unknown left out.
 *
 * @throws {Error} naming the first field that is wrong.
 */
export function parseHealthReport(value: unknown): ClusterHealthReport {
  if (!isFields(value)) throw new Error('a health report must be a JSON object');
  const certificates = value.certificates;
  if (!Array.isArray(certificates) || certificates.length > MAX_REPORTED_CERTIFICATES) {
    throw new Error(`certificates must be a list of at most ${MAX_REPORTED_CERTIFICATES}`);
  }
  const report: ClusterHealthReport = { certificates: certificates.map(certificateOf) };
  if (value.nodes !== undefined) report.nodes = nodesOf(value.nodes);
  if (value.kubernetesVersion !== undefined)
    report.kubernetesVersion = text(value.kubernetesVersion, 'kubernetesVersion');
  if (value.package !== undefined) report.package = packageOf(value.package);
  return report;
}

/** Whether two reports say the same (what is worth storing again). */
export function isSameReport(a: ClusterHealthReport, b: ClusterHealthReport): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(report: ClusterHealthReport): ClusterHealthReport {
  return {
    ...(report.nodes === undefined ? {} : { nodes: report.nodes }),
    ...(report.kubernetesVersion === undefined ? {} : { kubernetesVersion: report.kubernetesVersion }),
    certificates: report.certificates,
    ...(report.package === undefined ? {} : { package: report.package }),
  };
}
