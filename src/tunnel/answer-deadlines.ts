/**
 * The deadline by which the API server's answer to a bodiless request must
 * start, kept by one sweep for all requests in flight (HTTP/1.1 requests and
 * HTTP/2 streams alike). A socket timer per request, set and cleared, was a
 * visible share of the agent's CPU; the sweep runs only while a request
 * waits, so an overdue request ends up to one sweep interval late.
 */

/** Anything the sweep can end: a `ClientRequest`, a `ClientHttp2Stream`. */
export interface Cancellable {
  destroy(error?: Error): unknown;
}

/** Why a request whose answer did not start in time was ended (the agent's log; the user is told the code). */
export const ANSWER_TIMEOUT_MESSAGE = 'the API server did not answer in time';

/** A timeout the agent itself enforces, with the errno code that `describeUpstreamFailure` names. */
export function timeoutError(message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code: 'ETIMEDOUT' });
}

/** Sent requests awaiting the start of their answer, each with its deadline. */
export class AnswerDeadlines {
  readonly #deadlines = new Map<Cancellable, number>();
  #sweep: NodeJS.Timeout | undefined;
  readonly #timeoutMs: number;
  readonly #sweepMs: number;

  constructor(timing: { timeoutMs: number; sweepMs: number }) {
    this.#timeoutMs = timing.timeoutMs;
    this.#sweepMs = timing.sweepMs;
  }

  /** Gives a sent request its answer deadline. */
  await(request: Cancellable): void {
    this.#deadlines.set(request, Date.now() + this.#timeoutMs);
    if (this.#sweep === undefined) {
      this.#sweep = setInterval(() => this.#expire(), this.#sweepMs);
      this.#sweep.unref();
    }
  }

  /** The answer started (or the request ended): no deadline any more. */
  answered(request: Cancellable): void {
    this.#deadlines.delete(request);
  }

  /** Ends every request whose answer has not started by its deadline; stops when none waits. */
  #expire(): void {
    const now = Date.now();
    for (const [request, deadline] of this.#deadlines) {
      if (deadline > now) continue;
      this.#deadlines.delete(request);
      request.destroy(timeoutError(ANSWER_TIMEOUT_MESSAGE));
    }
    if (this.#deadlines.size === 0) this.close();
  }

  /** Stops the sweep (the requests still waiting keep no deadline). */
  close(): void {
    clearInterval(this.#sweep);
    this.#sweep = undefined;
  }
}
