/**
 * The shape limits every JSON document entering the hub is held to: how
 * deep it nests, how many keys an object and how many items an array may
 * have, how long a string (or key) may be. Size alone does not bound the
 * hub's work: a 100 KiB Rollout of nested arrays was taken by a warm hub and
 * then stopped every later start with "Maximum call stack size exceeded"
 * (issue #30). Every body the hub parses passes {@link checkDocumentLimits}
 * first (readJsonBody, the agents' report lines), and so does every stored
 * rollout at start, so the hub's recursive walks (canonical JSON, rendering,
 * summaries) only ever see documents at most {@link MAX_DOCUMENT_DEPTH} deep.
 *
 * Pure: no I/O. The walk is iterative (an explicit stack), so checking a
 * document of any depth cannot itself overflow the call stack.
 */
import { EdgeadmError } from '../../errors.js';

/**
 * Deepest nesting of objects and arrays a document may have. A Kubernetes
 * object rarely passes 20 levels and a Rollout wraps its resources in 4 more;
 * a CustomResourceDefinition's schema (two levels per property) is the
 * deepest common case. 128 leaves room for all of them and keeps the hub's
 * recursive walks a few hundred frames deep at most.
 */
export const MAX_DOCUMENT_DEPTH = 128;
/** Most keys one object may have (a ConfigMap with thousands of keys still fits). */
export const MAX_DOCUMENT_OBJECT_KEYS = 10_000;
/** Most items one array may have. */
export const MAX_DOCUMENT_ARRAY_ITEMS = 100_000;
/**
 * Longest string (value or key), in UTF-16 code units: the API server's own
 * bound on a request body (3 MiB), which no single value of an object can
 * pass.
 */
export const MAX_DOCUMENT_STRING_LENGTH = 3 * 1024 * 1024;

/** The limits {@link checkDocumentLimits} applies; the constants above by default. */
export interface DocumentLimits {
  maxDepth: number;
  maxObjectKeys: number;
  maxArrayItems: number;
  maxStringLength: number;
}

/** The hub's limits for every document it takes. */
export const HUB_DOCUMENT_LIMITS: DocumentLimits = {
  maxDepth: MAX_DOCUMENT_DEPTH,
  maxObjectKeys: MAX_DOCUMENT_OBJECT_KEYS,
  maxArrayItems: MAX_DOCUMENT_ARRAY_ITEMS,
  maxStringLength: MAX_DOCUMENT_STRING_LENGTH,
};

/** Which limit a document passed: the stable name an answer carries. */
export type DocumentLimitName = 'depth' | 'object-keys' | 'array-items' | 'string-length';

/** A document past one of the {@link DocumentLimits}. Code `E_DOCUMENT_LIMIT`. */
export class DocumentLimitError extends EdgeadmError {
  constructor(
    message: string,
    readonly limit: DocumentLimitName,
    readonly path: string,
  ) {
    super(message, {
      code: 'E_DOCUMENT_LIMIT',
      hints: [
        `documents the hub takes nest at most ${MAX_DOCUMENT_DEPTH} levels, with at most ${MAX_DOCUMENT_OBJECT_KEYS} keys per object, ${MAX_DOCUMENT_ARRAY_ITEMS} items per array and ${MAX_DOCUMENT_STRING_LENGTH} characters per string`,
      ],
      details: { limit, path },
    });
    this.name = 'DocumentLimitError';
  }
}

interface Frame {
  value: unknown;
  depth: number;
  /** The frame this value is inside, and its key or index there: the path, built only for an error. */
  parent: Frame | undefined;
  key: string | number | undefined;
}

/** `$.spec.resources[0]["a.b"]`, from a frame's chain of parents. */
function pathOf(frame: Frame | undefined, key?: string | number): string {
  const parts: (string | number)[] = key === undefined ? [] : [key];
  for (let at = frame; at?.key !== undefined; at = at.parent) parts.push(at.key);
  let path = '$';
  for (const part of parts.reverse()) {
    if (typeof part === 'number') path += `[${part}]`;
    else path += /^[A-Za-z_][A-Za-z0-9_-]*$/.test(part) ? `.${part}` : `[${JSON.stringify(part.slice(0, 64))}]`;
  }
  return path;
}

/**
 * Throws a {@link DocumentLimitError} naming the first limit `document`
 * passes and where (a JSONPath-like path), or returns when it passes none.
 * `what` names the document in the message ("the request body").
 */
export function checkDocumentLimits(
  document: unknown,
  what: string,
  limits: DocumentLimits = HUB_DOCUMENT_LIMITS,
): void {
  const stack: Frame[] = [{ value: document, depth: 0, parent: undefined, key: undefined }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const { value, depth } = frame;
    if (typeof value === 'string') {
      if (value.length > limits.maxStringLength) {
        const path = pathOf(frame);
        throw new DocumentLimitError(
          `${what}: the string at ${path} is longer than ${limits.maxStringLength} characters (the hub's string-length limit)`,
          'string-length',
          path,
        );
      }
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= limits.maxDepth) {
      const path = pathOf(frame);
      throw new DocumentLimitError(
        `${what} nests deeper than ${limits.maxDepth} levels (the hub's depth limit), at ${path}`,
        'depth',
        path,
      );
    }
    if (Array.isArray(value)) {
      if (value.length > limits.maxArrayItems) {
        const path = pathOf(frame);
        throw new DocumentLimitError(
          `${what}: the array at ${path} has more than ${limits.maxArrayItems} items (the hub's array-items limit)`,
          'array-items',
          path,
        );
      }
      for (let index = value.length - 1; index >= 0; index -= 1) {
        stack.push({ value: value[index], depth: depth + 1, parent: frame, key: index });
      }
      continue;
    }
    const keys = Object.keys(value);
    if (keys.length > limits.maxObjectKeys) {
      const path = pathOf(frame);
      throw new DocumentLimitError(
        `${what}: the object at ${path} has more than ${limits.maxObjectKeys} keys (the hub's object-keys limit)`,
        'object-keys',
        path,
      );
    }
    for (let index = keys.length - 1; index >= 0; index -= 1) {
      const key = keys[index] as string;
      if (key.length > limits.maxStringLength) {
        const path = pathOf(frame);
        throw new DocumentLimitError(
          `${what}: a key of the object at ${path} is longer than ${limits.maxStringLength} characters (the hub's string-length limit)`,
          'string-length',
          path,
        );
      }
      stack.push({ value: (value as Record<string, unknown>)[key], depth: depth + 1, parent: frame, key });
    }
  }
}
