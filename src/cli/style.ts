/**
 * Terminal styling: colour only on a TTY, and never when `NO_COLOR` is set
 * (https://no-color.org) or the terminal is dumb. `FORCE_COLOR` turns it on
 * for tools that capture a TTY-less stream but still want colour.
 */
import { Chalk, type ChalkInstance } from 'chalk';

/** Whether output to a stream with this TTY-ness should carry colour. */
export function isColorWanted(isTTY: boolean | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false') return true;
  if (env.TERM === 'dumb') return false;
  return isTTY === true;
}

/** A chalk instance for one stream, honouring {@link isColorWanted}. */
export function styleFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): ChalkInstance {
  return new Chalk({ level: isColorWanted(stream.isTTY, env) ? 1 : 0 });
}
