/**
 * The rollout control messages as the agent reads them: bounded bodies
 * (413 past the limit, 408 when the hub stops sending), JSON (400 when it is
 * not), and the shapes of wire.ts's copy and remove messages checked before
 * anything is done with them. Also the agent's short answers on a control
 * stream.
 */
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { constants as http2Constants } from 'node:http2';
import { COPY_MESSAGE_READ_TIMEOUT_MS, MAX_COPY_REVISION_LENGTH } from './limits.js';
import type { RenderedCopy } from './render.js';
import type { RolloutResource } from './spec.js';
import type { CopyMessage, RemoveMessage, RolloutOwner } from './wire.js';

/** A rollout or owner name the agent refuses, with why. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const REVISION = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** No control characters: a name that has one would break the impersonation header. */
function isHeaderSafe(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return false;
  }
  return true;
}

function parseRolloutName(value: unknown): Parsed<string> {
  if (typeof value !== 'string' || value.length > 63 || !DNS_LABEL.test(value)) {
    return { ok: false, message: 'rollout must be a DNS-1123 label' };
  }
  return { ok: true, value };
}

function parseOwner(value: unknown): Parsed<RolloutOwner> {
  if (!isRecord(value)) return { ok: false, message: 'owner must be an object' };
  const { user, groups } = value;
  if (typeof user !== 'string' || user === '' || !isHeaderSafe(user)) {
    return { ok: false, message: 'owner.user must be a user name' };
  }
  if (!Array.isArray(groups) || !groups.every((g) => typeof g === 'string' && g !== '' && isHeaderSafe(g))) {
    return { ok: false, message: 'owner.groups must be a list of group names' };
  }
  return { ok: true, value: { user, groups: groups as string[] } };
}

/** Checks the shape of a copy message (the hub renders it; the agent still refuses what it cannot apply). */
export function parseCopyMessage(value: unknown): Parsed<CopyMessage> {
  if (!isRecord(value)) return { ok: false, message: 'the message must be a JSON object' };
  const rollout = parseRolloutName(value['rollout']);
  if (!rollout.ok) return rollout;
  const owner = parseOwner(value['owner']);
  if (!owner.ok) return owner;
  const copy = value['copy'];
  if (!isRecord(copy)) return { ok: false, message: 'copy must be an object' };
  const revision = copy['revision'];
  if (typeof revision !== 'string' || revision.length > MAX_COPY_REVISION_LENGTH || !REVISION.test(revision)) {
    return { ok: false, message: 'copy.revision must be a revision' };
  }
  const objects = copy['objects'];
  if (!Array.isArray(objects)) return { ok: false, message: 'copy.objects must be a list' };
  for (const [index, object] of objects.entries()) {
    const metadata = isRecord(object) ? object['metadata'] : undefined;
    if (
      !isRecord(object) ||
      typeof object['apiVersion'] !== 'string' ||
      typeof object['kind'] !== 'string' ||
      !isRecord(metadata) ||
      typeof metadata['name'] !== 'string' ||
      (metadata['namespace'] !== undefined && typeof metadata['namespace'] !== 'string')
    ) {
      return { ok: false, message: `copy.objects[${index}] needs apiVersion, kind and metadata.name` };
    }
  }
  const rendered: RenderedCopy = { revision, objects: objects as RolloutResource[] };
  return { ok: true, value: { rollout: rollout.value, owner: owner.value, copy: rendered } };
}

/** Checks the shape of a remove message. */
export function parseRemoveMessage(value: unknown): Parsed<RemoveMessage> {
  if (!isRecord(value)) return { ok: false, message: 'the message must be a JSON object' };
  const rollout = parseRolloutName(value['rollout']);
  if (!rollout.ok) return rollout;
  const owner = parseOwner(value['owner']);
  if (!owner.ok) return owner;
  return { ok: true, value: { rollout: rollout.value, owner: owner.value } };
}

/** Answers a control stream with a status and a JSON body (also when the hub is still sending). */
export function answer(stream: ServerHttp2Stream, status: number, body?: unknown): void {
  if (stream.destroyed || stream.headersSent) return;
  if (body === undefined) {
    stream.respond({ ':status': status }, { endStream: true });
  } else {
    stream.respond({ ':status': status, 'content-type': 'application/json' });
    stream.end(JSON.stringify(body));
  }
}

/**
 * The bytes of message bodies being read at once, across streams: bounded,
 * so that many large copies arriving together cannot take the agent's
 * memory (each is bounded alone, their number only by the tunnel's streams).
 */
export class ReadBudget {
  held = 0;
  readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
  }
}

/**
 * Reads a control message's body up to `limit` bytes, or answers 413 (and
 * resets the stream, so the hub stops sending: RFC 9113 §8.1 lets a server
 * answer before the request is complete) and returns undefined. Past the
 * shared `budget` it answers 503 (the hub sends the message again later).
 */
export function readMessage(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  limit: number,
  budget?: ReadBudget,
): Promise<string | undefined> {
  const tooLarge = (): void => {
    answer(stream, 413, { message: `the message is larger than ${limit} bytes` });
    stream.close(http2Constants.NGHTTP2_NO_ERROR);
  };
  const declared = Number(headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    tooLarge();
    return Promise.resolve(undefined);
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let isDone = false;
    const finish = (text: string | undefined): void => {
      if (isDone) return;
      isDone = true;
      if (budget !== undefined) budget.held -= size;
      stream.setTimeout(0);
      resolve(text);
    };
    stream.setTimeout(COPY_MESSAGE_READ_TIMEOUT_MS, () => {
      answer(stream, 408, { message: 'the message did not arrive in time' });
      stream.close(http2Constants.NGHTTP2_CANCEL);
      finish(undefined);
    });
    stream.on('data', (chunk: Buffer) => {
      if (isDone) return;
      if (budget !== undefined && budget.held + chunk.length > budget.limit) {
        chunks.length = 0;
        answer(stream, 503, { message: 'the agent is reading too many messages at once; send this one again later' });
        stream.close(http2Constants.NGHTTP2_NO_ERROR);
        finish(undefined);
        return;
      }
      size += chunk.length;
      if (budget !== undefined) budget.held += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        tooLarge();
        finish(undefined);
      } else chunks.push(chunk);
    });
    stream.on('end', () => finish(Buffer.concat(chunks).toString('utf8')));
    stream.on('close', () => finish(undefined));
  });
}

/** Parses a message body as JSON, then checks its shape with `parse`. */
export function parseBody<T>(text: string, parse: (value: unknown) => Parsed<T>): Parsed<T> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: `the message is not JSON: ${(error as Error).message}` };
  }
  return parse(value);
}
