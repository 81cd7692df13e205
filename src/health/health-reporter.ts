/**
 * The agent's side of the health stream (wire.ts): while the hub holds the
 * stream open, read the cluster (cluster-reading.ts) on a timer and write a
 * report line whenever it says something new, and at least every
 * {@link HEALTH_REPORT_REFRESH_MS}. One stream at a time: a newer one (the
 * hub's, after a reconnect) replaces the older. Nothing is read while no
 * hub listens.
 */
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { Logger } from '../log/run-log.js';
import { readCertificates, readInstalledPackage, readNodes, type HealthSource } from './cluster-reading.js';
import {
  HEALTH_PATH,
  HEALTH_READ_INTERVAL_MS,
  HEALTH_REPORT_REFRESH_MS,
  HEALTH_SLOW_READ_INTERVAL_MS,
  isSameReport,
  type CertificateExpiryView,
  type ClusterHealthReport,
  type InstalledPackageView,
} from './wire.js';

/** A control stream the tunnel agent routes to the reporter. */
export interface HealthRoute {
  method: 'GET';
  path: typeof HEALTH_PATH;
  handle(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Promise<void>;
}

/** Options of {@link HealthReporter}. */
export interface HealthReporterOptions {
  source: HealthSource;
  logger: Logger;
  /** Overrides of the wire's periods, for tests. */
  timing?: { readMs?: number; slowReadMs?: number; refreshMs?: number };
}

/** What the slow reads last found, kept between them. */
interface SlowParts {
  certificates: CertificateExpiryView[];
  installed?: InstalledPackageView;
  readAt: number;
}

/** Reads the cluster for the hub and writes the report lines. */
export class HealthReporter {
  readonly #options: HealthReporterOptions;
  #stream: ServerHttp2Stream | undefined;
  #timer: NodeJS.Timeout | undefined;
  #slow: SlowParts | undefined;
  #lastWritten: ClusterHealthReport | undefined;
  #lastWrittenAt = 0;
  #isReading = false;

  constructor(options: HealthReporterOptions) {
    this.#options = options;
  }

  /** The route the tunnel agent serves. */
  route(): HealthRoute {
    return { method: 'GET', path: HEALTH_PATH, handle: async (stream) => this.#serve(stream) };
  }

  /** Ends the stream and stops reading. */
  close(): void {
    this.#stop();
    this.#stream?.end();
    this.#stream = undefined;
  }

  #serve(stream: ServerHttp2Stream): void {
    this.#stream?.end();
    this.#stream = stream;
    this.#lastWritten = undefined;
    stream.respond({ ':status': 200, 'content-type': 'application/x-ndjson' });
    stream.on('close', () => {
      if (this.#stream !== stream) return;
      this.#stream = undefined;
      this.#stop();
    });
    stream.on('error', () => undefined);
    this.#stop();
    const timer = setInterval(() => void this.#tick(), this.#options.timing?.readMs ?? HEALTH_READ_INTERVAL_MS);
    timer.unref();
    this.#timer = timer;
    void this.#tick();
  }

  #stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** One read, and a line when it says something new or the refresh is due. */
  async #tick(): Promise<void> {
    if (this.#isReading) return;
    this.#isReading = true;
    try {
      const report = await this.read();
      const stream = this.#stream;
      if (stream === undefined || stream.destroyed || stream.writableNeedDrain) return;
      const refreshMs = this.#options.timing?.refreshMs ?? HEALTH_REPORT_REFRESH_MS;
      const isDue = Date.now() - this.#lastWrittenAt >= refreshMs;
      if (this.#lastWritten !== undefined && isSameReport(this.#lastWritten, report) && !isDue) return;
      stream.write(`${JSON.stringify(report)}\n`);
      this.#lastWritten = report;
      this.#lastWrittenAt = Date.now();
    } finally {
      this.#isReading = false;
    }
  }

  /** Reads the cluster now: nodes and version every time, certificates and the package when due. */
  async read(): Promise<ClusterHealthReport> {
    const { source, logger } = this.#options;
    const onError = (what: string, error: Error): void =>
      logger.debug(`health report: cannot read ${what}: ${error.message}`);
    const report: ClusterHealthReport = { certificates: [] };
    await Promise.all([
      readNodes(source).then(
        (nodes) => (report.nodes = nodes),
        (error: Error) => onError('the nodes', error),
      ),
      source.getJson('/version').then(
        (version) => {
          const git = (version as { gitVersion?: unknown } | null)?.gitVersion;
          if (typeof git === 'string' && git.length > 0 && git.length <= 256) report.kubernetesVersion = git;
        },
        (error: Error) => onError('the version', error),
      ),
      this.#readSlowParts(onError),
    ]);
    const slow = this.#slow;
    if (slow !== undefined) {
      report.certificates = slow.certificates;
      if (slow.installed !== undefined) report.package = slow.installed;
    }
    return report;
  }

  async #readSlowParts(onError: (what: string, error: Error) => void): Promise<void> {
    const slowReadMs = this.#options.timing?.slowReadMs ?? HEALTH_SLOW_READ_INTERVAL_MS;
    if (this.#slow !== undefined && Date.now() - this.#slow.readAt < slowReadMs) return;
    const { source } = this.#options;
    const [certificates, installed] = await Promise.all([
      readCertificates(source, onError),
      readInstalledPackage(source).catch((error: Error) => {
        onError('the installed-package record', error);
        return this.#slow?.installed;
      }),
    ]);
    this.#slow = { certificates, readAt: Date.now(), ...(installed === undefined ? {} : { installed }) };
  }
}
