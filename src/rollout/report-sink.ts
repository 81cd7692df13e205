/**
 * The one report stream the agent writes to the hub, and what it holds back
 * while the hub does not read: one line per rollout, the latest. When the
 * hub acknowledges lines (wire.ts), it also keeps the latest line of each
 * rollout that the hub has not acknowledged yet, to write it again.
 */
import type { ServerHttp2Stream } from 'node:http2';
import type { ReportMessage } from './wire.js';

/** What a {@link ReportSink} writes to: the report stream (a writable HTTP/2 stream). */
export type ReportStream = Pick<ServerHttp2Stream, 'write' | 'end' | 'once' | 'destroyed' | 'closed' | 'writable'>;

/**
 * The one open report stream: while the hub does not read (`write` says the
 * stream's buffer is full), lines wait as the latest per rollout, so a
 * newer line replaces an unwritten older one and the lines held back never
 * outnumber the rollouts.
 */
export class ReportSink {
  readonly stream: ReportStream;
  readonly #waiting = new Map<string, ReportMessage>();
  /** With acknowledgements: per rollout, the latest line written and not acknowledged, and its number. */
  readonly #unacked = new Map<string, { seq: number; round: number; message: ReportMessage }>();
  readonly #isAcked: boolean;
  #seq = 0;
  /** Rounds of {@link resendUnacknowledged}: a line is written again once a whole round passed without its ack. */
  #round = 0;
  #isBlocked = false;

  /** @param options.isAcked the hub acknowledges lines: number them and keep the unacknowledged ones. */
  constructor(stream: ReportStream, options: { isAcked?: boolean } = {}) {
    this.stream = stream;
    this.#isAcked = options.isAcked === true;
  }

  /** How many rollouts have a line the hub has not acknowledged. */
  get unacknowledged(): number {
    return this.#unacked.size;
  }

  /** The hub took every line numbered up to `seq`. */
  ack(seq: number): void {
    for (const [rollout, line] of this.#unacked) if (line.seq <= seq) this.#unacked.delete(rollout);
  }

  /**
   * Writes again each line the hub has not acknowledged that was written
   * before the previous call (a whole round ago), unless a newer line of
   * its rollout waits. Called every `REPORT_RESEND_MS` (limits.ts).
   */
  resendUnacknowledged(): void {
    const due = [...this.#unacked.entries()].filter(([, line]) => line.round < this.#round);
    this.#round += 1;
    for (const [rollout, line] of due) {
      this.#unacked.delete(rollout);
      if (!this.#waiting.has(rollout)) this.offer(line.message);
    }
  }

  /** How many lines wait for the stream to drain. */
  get waiting(): number {
    return this.#waiting.size;
  }

  get isOpen(): boolean {
    return !this.stream.destroyed && !this.stream.closed && this.stream.writable;
  }

  offer(message: ReportMessage): void {
    // Deleted first, so that the latest line of a rollout goes to the back of the queue.
    this.#waiting.delete(message.rollout);
    this.#waiting.set(message.rollout, message);
    this.#flush();
  }

  #flush(): void {
    while (!this.#isBlocked && this.#waiting.size > 0 && this.isOpen) {
      const [rollout, message] = this.#waiting.entries().next().value as [string, ReportMessage];
      this.#waiting.delete(rollout);
      let line = message;
      if (this.#isAcked) {
        this.#seq += 1;
        line = { ...message, seq: this.#seq };
        this.#unacked.set(rollout, { seq: this.#seq, round: this.#round, message });
      }
      if (!this.stream.write(`${JSON.stringify(line)}\n`)) {
        this.#isBlocked = true;
        this.stream.once('drain', () => {
          this.#isBlocked = false;
          this.#flush();
        });
      }
    }
  }

  end(): void {
    if (this.isOpen) this.stream.end();
  }
}
