/**
 * Moving an answer's body on the proxied request path: from the API server's
 * answer into the tunnel stream (agent), and from the tunnel stream to the
 * user (hub). One helper for both, because the two ends share the reasons:
 *
 * - `pipe` costs more than this path needs: it installs and later removes
 *   half a dozen listeners on both streams for every request (the hub's CPU
 *   profile showed the unpipe at the end of every answer).
 * - An HTTP/2 stream that is ended while its last write is still in flight
 *   is closed, and destroyed, before that write's callback runs; Node's
 *   writable then builds an `ERR_STREAM_DESTROYED` error, stack trace and
 *   all, for every answer (about 5 % of the agent's CPU per small request).
 *   So an HTTP/2 stream is ended only once every write has completed, which
 *   costs one empty DATA frame that carries the end of the stream.
 *
 * Backpressure is kept: the source pauses while the target's buffer is
 * full and resumes on its `drain`.
 */
import type { Readable, Writable } from 'node:stream';

/**
 * Writes every chunk of `source` to `target` and ends `target` when `source`
 * has ended: with `isEndAfterWrites` (an HTTP/2 stream target) once every
 * write has also completed, else at once (an HTTP/1 answer, whose caller
 * may close it when the source closes, and so needs it ended by then).
 * Errors are the caller's: it listens for them on both streams, as it would
 * beside `pipe`. A target destroyed meanwhile is never ended; the caller
 * destroys the source then.
 */
export function forwardBody(
  source: Readable,
  target: Writable,
  options: {
    isEndAfterWrites: boolean;
    /** Called with each chunk before it is written (a byte counter): one 'data' listener instead of two. */
    onChunk?: (chunk: Buffer) => void;
  },
): void {
  if (!options.isEndAfterWrites) {
    forwardThenEnd(source, target, options.onChunk);
    return;
  }
  let pending = 0;
  let isSourceEnded = false;
  const endTarget = (): void => {
    if (!target.destroyed && !target.writableEnded) target.end();
  };
  const written = (): void => {
    pending -= 1;
    if (pending === 0 && isSourceEnded) endTarget();
  };
  const resume = (): void => {
    source.resume();
  };
  source.on('data', (chunk: Buffer) => {
    options.onChunk?.(chunk);
    if (target.destroyed) return;
    pending += 1;
    if (!target.write(chunk, written)) {
      source.pause();
      target.once('drain', resume);
    }
  });
  source.once('end', () => {
    isSourceEnded = true;
    if (pending === 0) endTarget();
  });
}

/** {@link forwardBody} without waiting for the writes: ends `target` in the same tick as `source`. */
function forwardThenEnd(source: Readable, target: Writable, onChunk?: (chunk: Buffer) => void): void {
  const resume = (): void => {
    source.resume();
  };
  source.on('data', (chunk: Buffer) => {
    onChunk?.(chunk);
    if (target.destroyed) return;
    if (!target.write(chunk)) {
      source.pause();
      target.once('drain', resume);
    }
  });
  source.once('end', () => {
    if (!target.destroyed && !target.writableEnded) target.end();
  });
}
