/**
 * Following a cluster's health stream (the contract is health/wire.ts):
 * once a tunnel is accepted, the hub opens the stream and hands each report
 * line, checked as untrusted input, to the health book. A line too long,
 * not JSON or not a report is logged and dropped, never thrown. A stream
 * that ends or breaks is opened again while the tunnel lasts, after a delay
 * that doubles while it keeps failing; an agent without the stream (404, or
 * an older agent's 400) is not asked again on this tunnel.
 */
import type { ClientHttp2Stream } from 'node:http2';
import type { Logger } from '../../log/run-log.js';
import type { HubTunnel } from '../../tunnel/hub-tunnel.js';
import { HEALTH_PATH, MAX_HEALTH_LINE_BYTES, parseHealthReport, type ClusterHealthReport } from '../../health/wire.js';
import { LineSplitter } from '../rollouts/report-lines.js';
import { HEALTH_STREAM_REOPEN_MAX_MS, HEALTH_STREAM_REOPEN_MS } from '../limits.js';

/** Where the reports go. */
export interface HealthSink {
  take(cluster: string, report: ClusterHealthReport): Promise<void>;
}

/** Options of {@link followHealth}, for tests. */
export interface FollowHealthOptions {
  reopenMs?: number;
  reopenMaxMs?: number;
}

/** Opens the tunnel's health stream and feeds `sink` until the tunnel closes; returns a function that stops. */
export function followHealth(
  tunnel: HubTunnel,
  sink: HealthSink,
  logger: Logger,
  options: FollowHealthOptions = {},
): () => void {
  const cluster = tunnel.cluster;
  const reopenMs = options.reopenMs ?? HEALTH_STREAM_REOPEN_MS;
  const reopenMaxMs = options.reopenMaxMs ?? HEALTH_STREAM_REOPEN_MAX_MS;
  let stream: ClientHttp2Stream | undefined;
  let reopen: NodeJS.Timeout | undefined;
  let isStopped = false;
  let failures = 0;
  const open = (): void => {
    reopen = undefined;
    if (isStopped || !tunnel.isOpen) return;
    let status = 0;
    let reports = 0;
    try {
      stream = tunnel.request({ ':method': 'GET', ':path': HEALTH_PATH }, { endStream: true });
    } catch (error) {
      logger.debug(`cluster ${cluster}: cannot open the health stream: ${(error as Error).message}`);
      scheduleReopen(false);
      return;
    }
    const splitter = new LineSplitter(MAX_HEALTH_LINE_BYTES, () =>
      logger.warn(`cluster ${cluster}: a health report longer than ${MAX_HEALTH_LINE_BYTES} bytes was dropped`),
    );
    stream.on('response', (headers) => {
      status = Number(headers[':status']);
    });
    stream.on('data', (chunk: Buffer) => {
      if (status !== 200) return;
      for (const line of splitter.push(chunk)) {
        if (line.trim() === '') continue;
        let report: ClusterHealthReport;
        try {
          report = parseHealthReport(JSON.parse(line));
        } catch (error) {
          logger.warn(`cluster ${cluster}: a health report was dropped: ${(error as Error).message}`);
          continue;
        }
        reports += 1;
        sink.take(cluster, report).catch(() => undefined);
      }
    });
    stream.on('error', (error) => logger.debug(`cluster ${cluster}: health stream: ${error.message}`));
    stream.on('close', () => {
      stream = undefined;
      if (status === 404 || status === 400) {
        logger.debug(`cluster ${cluster}: its agent sends no health reports (HTTP ${status})`);
        return;
      }
      scheduleReopen(status === 200 && reports > 0);
    });
  };
  const scheduleReopen = (wasServed: boolean): void => {
    if (isStopped || !tunnel.isOpen) return;
    failures = wasServed ? 0 : failures + 1;
    const delay = Math.min(reopenMaxMs, reopenMs * 2 ** Math.min(Math.max(0, failures - 1), 20));
    reopen = setTimeout(open, delay);
    reopen.unref();
  };
  open();
  const stop = (): void => {
    isStopped = true;
    clearTimeout(reopen);
    stream?.close();
  };
  // A draining tunnel (the agent stops or moves) takes nothing new, and waits for this stream to end.
  void tunnel.draining.then(stop);
  return stop;
}
