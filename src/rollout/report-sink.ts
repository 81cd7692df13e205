/**
 * The one report stream the agent writes to the hub, and what it holds back
 * while the hub does not read: one line per rollout, the latest.
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
  #isBlocked = false;

  constructor(stream: ReportStream) {
    this.stream = stream;
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
      if (!this.stream.write(`${JSON.stringify(message)}\n`)) {
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
