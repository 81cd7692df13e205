/**
 * TransferCounter: counts (and, for content not known up front, hashes) the
 * bytes of one transfer and reports progress, whether the bytes pass through
 * it or are sent elsewhere (a worker process) and only counted.
 */
import { createHash, type Hash } from 'node:crypto';
import { Transform, Writable } from 'node:stream';
import { PROGRESS_INTERVAL_BYTES, type TransferProgress } from './host.js';

/**
 * Counts (and hashes) the bytes of one transfer attempt and reports progress.
 * As a Transform it sits between a source and the channel; {@link into}
 * makes a Writable that feeds a destination.
 */
export class TransferCounter extends Transform {
  bytes = 0;
  readonly #resumedFrom: number;
  readonly #total: number | undefined;
  readonly #onProgress: ((progress: TransferProgress) => void) | undefined;
  readonly #hash: Hash | undefined;
  #lastReported = 0;
  #finished = false;

  constructor(
    resumedFrom: number,
    total: number | undefined,
    onProgress: ((progress: TransferProgress) => void) | undefined,
    isHashing: boolean,
  ) {
    super();
    this.#resumedFrom = resumedFrom;
    this.#total = total;
    this.#onProgress = onProgress;
    this.#hash = isHashing ? createHash('sha256') : undefined;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.#count(chunk);
    this.push(chunk);
    callback();
  }

  /** A Writable that counts what it is given and writes it on to `target`, with backpressure. */
  into(target: Writable): Writable {
    return new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        this.#count(chunk);
        if (target.write(chunk)) callback();
        else target.once('drain', () => callback());
      },
      final: (callback) => {
        target.once('error', callback);
        target.end(() => callback());
      },
    });
  }

  /** Counts bytes that were sent without passing through this counter (by the transport itself). */
  add(count: number): void {
    this.#count(Buffer.alloc(0), count);
  }

  /** Reports the final progress once. */
  finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#report();
  }

  /** SHA-256 (hex) of everything counted; the counter must have been made hashing. */
  sha256(): string {
    if (this.#hash === undefined) throw new Error('internal: transfer counter is not hashing');
    return this.#hash.copy().digest('hex');
  }

  #count(chunk: Buffer, length = chunk.length): void {
    this.bytes += length;
    this.#hash?.update(chunk);
    if (this.bytes - this.#lastReported >= PROGRESS_INTERVAL_BYTES) this.#report();
  }

  #report(): void {
    this.#lastReported = this.bytes;
    this.#onProgress?.({ bytesTransferred: this.bytes, resumedFrom: this.#resumedFrom, totalBytes: this.#total });
  }
}
