/**
 * Bounded capture of a command's output: keeps the last `limit` bytes, where
 * the error messages are, and says when it dropped the start.
 */

/** Collects chunks up to a byte limit, dropping the oldest first. */
export class OutputCapture {
  readonly #limit: number;
  #chunks: Buffer[] = [];
  #bytes = 0;
  #truncated = false;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Adds a chunk of output. */
  push(chunk: Buffer | string): void {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    this.#chunks.push(buffer);
    this.#bytes += buffer.length;
    while (this.#bytes > this.#limit && this.#chunks.length > 0) {
      const first = this.#chunks[0]!;
      const excess = this.#bytes - this.#limit;
      this.#truncated = true;
      if (first.length <= excess) {
        this.#chunks.shift();
        this.#bytes -= first.length;
      } else {
        this.#chunks[0] = first.subarray(excess);
        this.#bytes -= excess;
      }
    }
  }

  /** Whether output was dropped. */
  get truncated(): boolean {
    return this.#truncated;
  }

  /** The kept output as UTF-8 text. */
  text(): string {
    return Buffer.concat(this.#chunks).toString('utf8');
  }
}
