/**
 * CoalescingSocket: a TCP socket that sends everything written to it in one
 * turn of the event loop with one `writev`.
 *
 * ssh2 writes each SSH packet in three or four pieces (length, ciphertext,
 * MAC; aes128-gcm@openssh.com, negotiated with OpenSSH, writes length,
 * ciphertext and tag), so an upload would otherwise cost the kernel a write
 * system call per piece, and TCP as many small segments (Nagle is off, for
 * the round trips of short commands). In a process that feeds many hosts at
 * once, those system calls were the largest single cost of an upload. Corking until the end of the current tick
 * delays nothing that a caller waits for: the bytes leave before any I/O
 * callback runs.
 */
import { Socket } from 'node:net';

/** A net.Socket whose writes within one tick leave together. */
export class CoalescingSocket extends Socket {
  #isCorked = false;

  override connect(...args: unknown[]): this {
    (super.connect as (...connectArgs: unknown[]) => this)(...args);
    // net.Socket's connect() sets `this.write = Socket.prototype.write` (to
    // undo a write-after-FIN guard from an earlier connection), which would
    // hide the override below.
    if (Object.hasOwn(this, 'write')) delete (this as { write?: unknown }).write;
    return this;
  }

  override write(...args: unknown[]): boolean {
    if (!this.#isCorked) {
      this.#isCorked = true;
      this.cork();
      process.nextTick(() => {
        this.#isCorked = false;
        this.uncork();
      });
    }
    return (super.write as (...writeArgs: unknown[]) => boolean)(...args);
  }
}
