/**
 * An agent's report lines as the hub reads them: split from the stream
 * with a bound per line, and checked one by one into a report or the reason
 * it is none. Also how an agent older than rollouts refuses, and what its
 * clusters' rows then say. Pure: no I/O.
 */
import { type ReportMessage, type ReportedObject } from '../../rollout/wire.js';

/** Most bytes of an agent's refusal the hub reads, to quote it. */
export const MAX_REFUSAL_BYTES = 4096;

/**
 * The Kubernetes Status an agent from before rollouts answers to any
 * stream without identity headers that is not its handshake (tunnel
 * upstream.ts: "the tunnel stream carries no identity to impersonate").
 */
export function isOlderAgentRefusal(status: number, body: string): boolean {
  return status === 400 && body.includes('carries no identity');
}

/** The message shown for a cluster whose agent does not serve rollouts. */
export function unsupportedMessage(cluster: string): string {
  return `the agent of cluster "${cluster}" does not serve rollouts (its edgeadm is older than the hub's); upgrade the agent`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isOptionalString(value: unknown): boolean {
  return value === undefined || typeof value === 'string';
}

function reportedObjectOf(value: unknown): ReportedObject | undefined {
  if (!isRecord(value)) return undefined;
  const { apiVersion, kind, name, namespace, status } = value;
  if (typeof apiVersion !== 'string' || typeof kind !== 'string' || typeof name !== 'string') return undefined;
  if (!isOptionalString(namespace) || (status !== undefined && !isRecord(status))) return undefined;
  return {
    apiVersion,
    kind,
    name,
    ...(namespace === undefined ? {} : { namespace: namespace as string }),
    ...(status === undefined ? {} : { status: status }),
  };
}

/** Checks one parsed report line; the reason when it is not a report. */
export function reportOf(value: unknown): ReportMessage | string {
  if (!isRecord(value)) return 'not a JSON object';
  const { kind, rollout, cluster, message } = value;
  if (typeof rollout !== 'string' || typeof cluster !== 'string') return 'rollout or cluster is missing';
  if (!isOptionalString(message)) return 'message is not a string';
  if (kind === 'removed') {
    return { kind, rollout, cluster, ...(message === undefined ? {} : { message: message as string }) };
  }
  if (kind !== 'copy') return `unknown kind ${JSON.stringify(kind)}`;
  const { revision, readiness, objects } = value;
  if (typeof revision !== 'string') return 'revision is missing';
  if (readiness !== 'ready' && readiness !== 'progressing' && readiness !== 'failed') return 'readiness is not known';
  if (!Array.isArray(objects)) return 'objects is not a list';
  const checked = objects.map(reportedObjectOf);
  if (checked.some((object) => object === undefined)) return 'an object lacks apiVersion, kind or name';
  return {
    kind,
    rollout,
    cluster,
    revision,
    readiness,
    objects: checked as ReportedObject[],
    ...(message === undefined ? {} : { message: message as string }),
  };
}

/**
 * Splits a byte stream into lines of at most `maxBytes`; a longer line is
 * dropped whole (reported once through `onDropped`), and reading goes on
 * at the next newline. Holds at most `maxBytes` at any time.
 */
export class LineSplitter {
  readonly #maxBytes: number;
  readonly #onDropped: () => void;
  #parts: Buffer[] = [];
  #size = 0;
  #isDropping = false;

  constructor(maxBytes: number, onDropped: () => void) {
    this.#maxBytes = maxBytes;
    this.#onDropped = onDropped;
  }

  /** The complete lines in `chunk` (with what came before it). */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (let end = chunk.indexOf(0x0a); end !== -1; end = chunk.indexOf(0x0a, start)) {
      this.#take(chunk.subarray(start, end));
      if (!this.#isDropping) lines.push(Buffer.concat(this.#parts).toString('utf8'));
      this.#parts = [];
      this.#size = 0;
      this.#isDropping = false;
      start = end + 1;
    }
    this.#take(chunk.subarray(start));
    return lines;
  }

  #take(part: Buffer): void {
    if (this.#isDropping || part.length === 0) return;
    if (this.#size + part.length > this.#maxBytes) {
      this.#isDropping = true;
      this.#parts = [];
      this.#size = 0;
      this.#onDropped();
      return;
    }
    this.#parts.push(part);
    this.#size += part.length;
  }
}
