/**
 * Raw bytes both ways between the two ends of one upgraded connection
 * (exec, attach, port-forward), with half-close.
 *
 * `pipeline` does not serve here. When its destination closes first (a TLS
 * socket whose peer closed: with `allowHalfOpen` false it closes as soon as
 * it has read the end), it destroys its source with a premature-close error;
 * an HTTP/2 stream destroyed drops the frames it still holds. On a real API
 * server the last frames of an exec (its status on the error channel) came
 * with the server's close, and were lost so: kubectl printed the command's
 * output, then "error reading from error stream", and exited 1.
 *
 * Here an end travels as an end, after everything written before it; bytes
 * for a side that can no longer take them are dropped, and an error on one
 * side destroys the other (the connection is broken, nothing is owed).
 */
import type { Duplex } from 'node:stream';

/** Relays `a` → `b` and `b` → `a` until both directions have ended or one side fails. */
export function relayBothWays(a: Duplex, b: Duplex): void {
  relayOneWay(a, b);
  relayOneWay(b, a);
}

function relayOneWay(from: Duplex, to: Duplex): void {
  const canTake = (): boolean => !to.destroyed && !to.writableEnded;
  from.on('data', (chunk: Buffer) => {
    if (!canTake()) return;
    if (!to.write(chunk)) {
      from.pause();
      to.once('drain', () => from.resume());
    }
  });
  from.once('end', () => {
    if (canTake()) to.end();
  });
  from.once('error', () => to.destroy());
}

/**
 * Closes `side` once the other end of its relay has closed: at once when its
 * writable side was never ended (the other end failed), else once what it
 * still holds is written, or after `graceMs` at the latest.
 */
export function closeAfterFlush(side: Duplex, graceMs: number): void {
  if (side.destroyed) return;
  if (!side.writableEnded) {
    side.destroy();
    return;
  }
  const grace = setTimeout(() => side.destroy(), graceMs);
  grace.unref();
  side.once('close', () => clearTimeout(grace));
}
