/**
 * ssh2, loaded on first use rather than at import time.
 *
 * ssh2 compiles a WebAssembly module (poly1305) while it loads. The single
 * binary evaluates every statically imported module into a V8 startup
 * snapshot at build time, where WebAssembly is not available; a dynamic
 * import keeps ssh2 out of the snapshot, and costs nothing for commands that
 * never open an SSH connection.
 */
import type ssh2Module from 'ssh2';

export type Ssh2 = typeof ssh2Module;

let loading: Promise<Ssh2> | undefined;

/** The ssh2 module (CommonJS, so its exports are the default export). */
export async function loadSsh2(): Promise<Ssh2> {
  loading ??= import('ssh2').then(
    (module) => (module as unknown as { default: Ssh2 }).default ?? (module as unknown as Ssh2),
  );
  return loading;
}
