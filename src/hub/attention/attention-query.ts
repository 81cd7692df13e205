/**
 * The attention list's query string (src/hub/contract/attention.ts names
 * the parameters), parsed once into one typed request. Every mistake is a
 * 400 that names the parameter; the web view and the operator API parse
 * the same way.
 */
import { parseLabelSelector, type LabelSelector } from '../../kube/label-selector.js';
import {
  ATTENTION_REASON_KINDS,
  ATTENTION_SORT_KEYS,
  type AttentionReasonKind,
  type AttentionSortKey,
} from '../contract/attention.js';
import { HttpError } from '../http/http-replies.js';
import {
  DEFAULT_ATTENTION_PAGE_SIZE,
  DEFAULT_CERTS_WITHIN_DAYS,
  DEFAULT_OFFLINE_FOR_S,
  MAX_ATTENTION_PAGE_SIZE,
  MAX_ATTENTION_SELECTOR_LENGTH,
  MAX_CERTS_WITHIN_DAYS,
  MAX_OFFLINE_FOR_S,
} from './limits.js';

/** A parsed attention list request. */
export interface AttentionQuery {
  selector: LabelSelector;
  /** Only clusters with this reason; undefined: any reason. */
  reason: AttentionReasonKind | undefined;
  offlineForSeconds: number;
  certsWithinDays: number;
  sort: AttentionSortKey;
  isDescending: boolean;
  offset: number;
  limit: number;
}

/** The stable code of every refused attention query (a bad selector keeps E_SELECTOR_INVALID). */
export const ATTENTION_QUERY_ERROR = 'E_ATTENTION_BAD_QUERY';

function bad(message: string): HttpError {
  return new HttpError(400, ATTENTION_QUERY_ERROR, message);
}

function wholeNumber(params: URLSearchParams, key: string, fallback: number, max: number): number {
  const text = params.get(key);
  if (text === null || text === '') return fallback;
  if (!/^\d{1,10}$/.test(text) || Number(text) > max) throw bad(`${key} must be a whole number from 0 to ${max}`);
  return Number(text);
}

function oneOf<T extends string>(params: URLSearchParams, key: string, allowed: readonly T[]): T | undefined {
  const text = params.get(key);
  if (text === null || text === '') return undefined;
  if (!allowed.includes(text as T)) throw bad(`${key} must be one of ${allowed.join(', ')}`);
  return text as T;
}

/** Parses the attention list's query string. */
export function parseAttentionQuery(params: URLSearchParams): AttentionQuery {
  const selectorText = params.get('selector') ?? '';
  if (selectorText.length > MAX_ATTENTION_SELECTOR_LENGTH) {
    throw bad(`selector: at most ${MAX_ATTENTION_SELECTOR_LENGTH} characters`);
  }
  let selector: LabelSelector;
  try {
    selector = parseLabelSelector(selectorText);
  } catch (error) {
    throw new HttpError(400, 'E_SELECTOR_INVALID', `selector: ${(error as Error).message}`);
  }
  return {
    selector,
    reason: oneOf(params, 'reason', ATTENTION_REASON_KINDS),
    offlineForSeconds: wholeNumber(params, 'offlineFor', DEFAULT_OFFLINE_FOR_S, MAX_OFFLINE_FOR_S),
    certsWithinDays: wholeNumber(params, 'certsWithin', DEFAULT_CERTS_WITHIN_DAYS, MAX_CERTS_WITHIN_DAYS),
    sort: oneOf(params, 'sort', ATTENTION_SORT_KEYS) ?? 'severity',
    isDescending: oneOf(params, 'order', ['asc', 'desc'] as const) === 'desc',
    offset: wholeNumber(params, 'offset', 0, 1e9),
    limit: Math.max(1, wholeNumber(params, 'limit', DEFAULT_ATTENTION_PAGE_SIZE, MAX_ATTENTION_PAGE_SIZE)),
  };
}
