/**
 * Following an agent's report stream (the contract is src/rollout/wire.ts):
 * once a tunnel is accepted, the hub opens the stream and hands every
 * report line to a sink (the controller, or the forwarder to the leading
 * replica). A line too long, not JSON or not a report for the tunnel's own
 * cluster is logged and dropped, never thrown; numbered lines are
 * acknowledged once the sink took them for good; a stream refused, broken
 * or with a line not taken is opened again, with backoff.
 */
import { checkDocumentLimits } from '../http/document-limits.js';
import type { ClientHttp2Stream } from 'node:http2';
import type { Logger } from '../../log/run-log.js';
import type { HubTunnel } from '../../tunnel/hub-tunnel.js';
import { ROLLOUT_REPORT_ACKS_HEADER, ROLLOUT_REPORTS_PATH, type ReportMessage } from '../../rollout/wire.js';
import { MAX_ROLLOUT_REPORT_LINE_BYTES, ROLLOUT_REPORTS_REOPEN_MAX_MS, ROLLOUT_REPORTS_REOPEN_MS } from '../limits.js';
import { isOlderAgentRefusal, LineSplitter, MAX_REFUSAL_BYTES, reportOf, unsupportedMessage } from './report-lines.js';

/** What the report stream feeds. */
export interface ReportSink {
  /**
   * Takes one report. A promise says when the report is taken for good (the
   * leading replica wrote it to the store): the line is acknowledged to the
   * agent only then, and if it rejects the stream starts over, so that the
   * agent sends its current reports again. Anything else: taken at once.
   */
  report(cluster: string, message: ReportMessage): void | Promise<void>;
  /** The cluster's agent does not serve rollouts. */
  unsupported(cluster: string): void;
}

/** A numbered report line read from the agent, until the sink took it. */
interface NumberedLine {
  seq: number;
  isTaken: boolean;
}

/**
 * The acknowledgements on one report stream (wire.ts). They are
 * cumulative (the agent forgets every line up to the number), so a number
 * is acknowledged only once its line and every numbered line before it
 * were taken; writes wait for the stream to drain.
 */
class ReportAcks {
  readonly #stream: ClientHttp2Stream;
  /** Numbered lines not yet acknowledged, in order. */
  readonly #lines: NumberedLine[] = [];
  #seenSeq = 0;
  #takenSeq = 0;
  #ackedSeq = 0;
  #isBlocked = false;

  constructor(stream: ClientHttp2Stream) {
    this.#stream = stream;
  }

  /** A parsed line: its entry (taken until told otherwise) if it carries a number newer than all before. */
  read(parsed: unknown): NumberedLine | undefined {
    const seq = (parsed as { seq?: unknown } | null)?.seq;
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq <= this.#seenSeq) return undefined;
    this.#seenSeq = seq;
    const line = { seq, isTaken: true };
    this.#lines.push(line);
    return line;
  }

  /**
   * What the sink answered for a line: a promise holds the line back until
   * it resolves; a rejection is told to `onNotTaken` (the line is never
   * acknowledged on this stream).
   */
  whenTaken(line: NumberedLine | undefined, taken: unknown, onNotTaken: (error: Error) => void): void {
    if (!(taken instanceof Promise)) return;
    if (line !== undefined) line.isTaken = false;
    taken.then(
      () => {
        if (line === undefined) return;
        line.isTaken = true;
        this.flush();
      },
      (error: Error) => onNotTaken(error),
    );
  }

  /** Acknowledges every line taken so far, up to the first that is not. */
  flush(): void {
    while (this.#lines[0]?.isTaken === true) this.#takenSeq = this.#lines.shift()!.seq;
    const stream = this.#stream;
    if (this.#isBlocked || this.#takenSeq <= this.#ackedSeq || stream.destroyed || !stream.writable) return;
    this.#ackedSeq = this.#takenSeq;
    if (!stream.write(`${JSON.stringify({ ack: this.#ackedSeq })}\n`)) {
      this.#isBlocked = true;
      stream.once('drain', () => {
        this.#isBlocked = false;
        this.flush();
      });
    }
  }
}

/** Timers of {@link followReports} (injected: tests see the delays asked for instead of waiting them out). */
export interface ReportTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const systemReportTimers: ReportTimers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Options of {@link followReports}. */
export interface FollowReportsOptions {
  maxLineBytes?: number;
  /** The first delay before the stream is opened again; {@link ROLLOUT_REPORTS_REOPEN_MS} by default. */
  reopenMs?: number;
  /** The longest delay, however often it fails; {@link ROLLOUT_REPORTS_REOPEN_MAX_MS} by default. */
  reopenMaxMs?: number;
  timers?: ReportTimers;
}

/**
 * The delay before the report stream is opened again after `failures`
 * streams in a row that were refused, broken or never opened: doubling from
 * `firstMs`, at most `maxMs`.
 */
export function reportsReopenDelay(failures: number, firstMs: number, maxMs: number): number {
  return Math.min(maxMs, firstMs * 2 ** Math.min(Math.max(0, failures - 1), 30));
}

/**
 * Opens the tunnel's report stream and feeds the sink until the tunnel
 * closes. Returns a function that stops following (closes the stream): a
 * draining tunnel waits for its open streams, and this one never ends by
 * itself.
 *
 * Whatever ends a stream while the tunnel stays open, it is opened again:
 * the agent's reports are only ever sent on it, and the agent sends its
 * current report of every copy first on each new stream, so a report lost
 * with a broken stream is sent again on the next one. A stream that ended
 * after being served is reopened after `reopenMs`; one that was refused
 * (the agent answered 503 while it was still starting, or anything but 200)
 * or could not be opened, after a delay that doubles up to `reopenMaxMs`.
 * Only an agent that does not serve rollouts at all (404, or an older
 * agent's 400) is not asked again on this tunnel: its next tunnel may be a
 * newer agent's.
 */
export function followReports(
  tunnel: HubTunnel,
  sink: ReportSink,
  logger: Logger,
  options: FollowReportsOptions = {},
): () => void {
  const cluster = tunnel.cluster;
  const maxLineBytes = options.maxLineBytes ?? MAX_ROLLOUT_REPORT_LINE_BYTES;
  const reopenMs = options.reopenMs ?? ROLLOUT_REPORTS_REOPEN_MS;
  const reopenMaxMs = options.reopenMaxMs ?? ROLLOUT_REPORTS_REOPEN_MAX_MS;
  const timers = options.timers ?? systemReportTimers;
  let stream: ClientHttp2Stream | undefined;
  let reopen: unknown;
  let isStopped = false;
  /** Streams in a row that were refused, broken before an answer, or not opened. */
  let failures = 0;
  const scheduleReopen = (isFailure: boolean): void => {
    if (isStopped || !tunnel.isOpen) return;
    failures = isFailure ? failures + 1 : 0;
    const delay = isFailure ? reportsReopenDelay(failures, reopenMs, reopenMaxMs) : reopenMs;
    reopen = timers.setTimeout(open, delay);
  };
  const open = (): void => {
    reopen = undefined;
    if (isStopped || !tunnel.isOpen) return;
    let isUnsupported = false;
    let isRefused = false;
    /** A report on this stream was not taken: the next stream waits as after a failure. */
    let isUntaken = false;
    let status = 0;
    const refusal: Buffer[] = [];
    try {
      // Our side stays open: it carries the acknowledgements of the lines taken.
      stream = tunnel.request(
        { ':method': 'GET', ':path': ROLLOUT_REPORTS_PATH, [ROLLOUT_REPORT_ACKS_HEADER]: '1' },
        { endStream: false },
      );
    } catch (error) {
      logger.debug(`cluster ${cluster}: cannot open the report stream: ${(error as Error).message}`);
      scheduleReopen(true);
      return;
    }
    const opened = stream;
    const acks = new ReportAcks(opened);
    const splitter = new LineSplitter(maxLineBytes, () =>
      logger.warn(`cluster ${cluster}: a report line longer than ${maxLineBytes} bytes was dropped`),
    );
    stream.on('response', (headers) => {
      status = Number(headers[':status']);
      if (status !== 200) isRefused = true;
      if (status === 404) markUnsupported();
    });
    const markUnsupported = (): void => {
      if (isUnsupported) return;
      isUnsupported = true;
      logger.warn(unsupportedMessage(cluster));
      sink.unsupported(cluster);
    };
    stream.on('end', () => {
      // The agent ended its side: end ours too (it carries only acknowledgements), so the stream closes.
      opened.close();
      if (!isRefused || isUnsupported) return;
      if (isOlderAgentRefusal(status, Buffer.concat(refusal).toString('utf8'))) markUnsupported();
      else logger.debug(`cluster ${cluster}: the report stream was answered ${status}; opening it again later`);
    });
    stream.on('data', (chunk: Buffer) => {
      if (isRefused) {
        if (refusal.length < 16) refusal.push(chunk.subarray(0, MAX_REFUSAL_BYTES));
        return;
      }
      for (const line of splitter.push(chunk)) {
        if (line.trim() === '') continue;
        let parsed: unknown;
        try {
          parsed = JSON.parse(line);
        } catch {
          logger.warn(`cluster ${cluster}: a report line is not JSON; dropped`);
          continue;
        }
        // Acknowledged once taken, or at once when dropped for good: either way the agent need not send it again.
        const numbered = acks.read(parsed);
        try {
          // A report is stored and summarized: past the hub's document limits it is dropped, never walked.
          checkDocumentLimits(parsed, 'a report line');
        } catch (error) {
          logger.warn(`cluster ${cluster}: ${(error as Error).message}; dropped`);
          continue;
        }
        const report = reportOf(parsed);
        if (typeof report === 'string') {
          logger.warn(`cluster ${cluster}: a report line was dropped: ${report}`);
        } else if (report.cluster !== cluster) {
          logger.warn(`cluster ${cluster}: a report line names cluster ${JSON.stringify(report.cluster)}; dropped`);
        } else {
          try {
            acks.whenTaken(numbered, sink.report(cluster, report), (error) => {
              // Not taken: this stream starts over, and the agent's first lines on the next are its current reports.
              logger.debug(`cluster ${cluster}: a report was not taken (${error.message}); opening the stream again`);
              isUntaken = true;
              opened.close();
            });
          } catch (error) {
            logger.error(`cluster ${cluster}: recording a report failed: ${(error as Error).message}`);
          }
        }
      }
      acks.flush();
    });
    stream.on('error', (error) => logger.debug(`cluster ${cluster}: report stream: ${error.message}`));
    stream.on('close', () => {
      stream = undefined;
      if (isUnsupported) return;
      // A stream answered 200 that ended is no failure (the agent ended it, e.g. for a newer one); one refused
      // or reset before its answer is, and waits longer each time.
      scheduleReopen(isRefused || isUntaken || status === 0);
    });
  };
  open();
  const stop = (): void => {
    isStopped = true;
    if (reopen !== undefined) timers.clearTimeout(reopen);
    stream?.close();
  };
  void tunnel.closed.then(stop);
  return stop;
}
