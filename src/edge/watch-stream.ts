/**
 * The pure parts of relaying a watch, kept apart from its sockets as `ws`
 * keeps its frame parser apart from its socket handling: splitting the
 * upstream stream into event lines (bounded), reading what an event says
 * about the list it watches, and the target a watch resumes with.
 */
import type { ApiPath } from '../kube/api-path.js';
import type { WatchEvent } from './list-patch.js';

/** Parameters a resumed watch drops: it starts from the resourceVersion the client last saw instead. */
const RESUME_REPLACED = new Set(['resourceVersion', 'sendInitialEvents', 'resourceVersionMatch']);

/**
 * Splits a watch stream into event lines. Empty lines are dropped; a line
 * still unfinished past `maxLineBytes` makes the stream overflow (the watch
 * is ended rather than held in memory without bound).
 */
export class WatchLineSplitter {
  #partial = '';

  constructor(private readonly maxLineBytes: number) {}

  /** The whole lines `chunk` completes, and whether the unfinished rest passed the bound. */
  push(chunk: string): { lines: string[]; isOverflow: boolean } {
    this.#partial += chunk;
    const lines: string[] = [];
    let newline: number;
    while ((newline = this.#partial.indexOf('\n')) >= 0) {
      const line = this.#partial.slice(0, newline).trim();
      this.#partial = this.#partial.slice(newline + 1);
      if (line !== '') lines.push(line);
    }
    return { lines, isOverflow: this.#partial.length > this.maxLineBytes };
  }
}

/** A line as a watch event, or `undefined` when it is not JSON (it is still forwarded as it came). */
export function parseWatchEvent(line: string): WatchEvent | undefined {
  try {
    return JSON.parse(line) as WatchEvent;
  } catch {
    return undefined;
  }
}

/** The resourceVersion an event moves the client to, if it moves it (ERROR events do not). */
export function versionAfter(event: WatchEvent): string | undefined {
  const version = event.object?.metadata?.resourceVersion;
  return event.type !== 'ERROR' && typeof version === 'string' ? version : undefined;
}

/** The resourceVersion a client's watch starts from; `0` ("any") and none mean no position. */
export function initialVersionOf(query: string): string | undefined {
  const version = new URLSearchParams(query).get('resourceVersion');
  return version && version !== '0' ? version : undefined;
}

/**
 * The target a watch is sent upstream with: the client's own while it has
 * seen no resourceVersion; otherwise the same path and query with the
 * resourceVersion moved on (the path is never re-parsed).
 */
export function resumeTarget(target: ApiPath, lastVersion: string | undefined): string {
  if (lastVersion === undefined) return target.target;
  const kept = target.query
    .split('&')
    .filter((pair) => pair !== '' && !RESUME_REPLACED.has([...new URLSearchParams(pair).keys()][0] ?? ''));
  kept.push(`resourceVersion=${encodeURIComponent(lastVersion)}`);
  return `${target.path}?${kept.join('&')}`;
}

/** The watch's `timeoutSeconds` in milliseconds, when the client asked for one. */
export function watchTimeoutMs(query: string): number | undefined {
  const timeoutSeconds = Number(new URLSearchParams(query).get('timeoutSeconds'));
  return Number.isFinite(timeoutSeconds) && timeoutSeconds > 0 ? timeoutSeconds * 1000 : undefined;
}
