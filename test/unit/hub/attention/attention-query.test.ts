/**
 * The attention list's query string (src/hub/attention/attention-query.ts):
 * the defaults the issue names (every disconnected cluster, certificates
 * within 30 days, most severe first), and a 400 naming the parameter for
 * every value it does not take.
 */
import { describe, expect, it } from 'vitest';
import { parseAttentionQuery } from '../../../../src/hub/attention/attention-query.js';
import {
  MAX_ATTENTION_PAGE_SIZE,
  MAX_CERTS_WITHIN_DAYS,
  MAX_OFFLINE_FOR_S,
} from '../../../../src/hub/attention/limits.js';
import { HttpError } from '../../../../src/hub/http/http-replies.js';

const parse = (params: Record<string, string>) => parseAttentionQuery(new URLSearchParams(params));

describe('parseAttentionQuery', () => {
  it('defaults to every disconnected cluster, certificates within 30 days, most severe first, 50 a page', () => {
    expect(parse({})).toMatchObject({
      reason: undefined,
      offlineForSeconds: 0,
      certsWithinDays: 30,
      sort: 'severity',
      isDescending: false,
      offset: 0,
      limit: 50,
    });
  });

  it('takes every parameter it documents', () => {
    expect(
      parse({
        selector: 'env=prod',
        reason: 'nodes-not-ready',
        offlineFor: '600',
        certsWithin: '7',
        sort: 'since',
        order: 'desc',
        offset: '50',
        limit: String(MAX_ATTENTION_PAGE_SIZE),
      }),
    ).toMatchObject({
      reason: 'nodes-not-ready',
      offlineForSeconds: 600,
      certsWithinDays: 7,
      sort: 'since',
      isDescending: true,
      offset: 50,
      limit: MAX_ATTENTION_PAGE_SIZE,
    });
    expect(parse({ offlineFor: String(MAX_OFFLINE_FOR_S), certsWithin: String(MAX_CERTS_WITHIN_DAYS) })).toMatchObject({
      offlineForSeconds: MAX_OFFLINE_FOR_S,
      certsWithinDays: MAX_CERTS_WITHIN_DAYS,
    });
  });

  it.each([
    ['offlineFor', '-1'],
    ['offlineFor', '10m'],
    ['offlineFor', String(MAX_OFFLINE_FOR_S + 1)],
    ['certsWithin', '1.5'],
    ['certsWithin', String(MAX_CERTS_WITHIN_DAYS + 1)],
    ['reason', 'sad'],
    ['sort', 'password'],
    ['order', 'sideways'],
    ['limit', String(MAX_ATTENTION_PAGE_SIZE + 1)],
    ['offset', '1e3'],
    ['selector', 'env=prod,,'],
    ['selector', 'x'.repeat(1_001)],
  ])('answers %s=%s with a 400 that names it', (key, value) => {
    let error: unknown;
    try {
      parse({ [key]: value });
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({ status: 400, message: expect.stringMatching(new RegExp(`^${key}\\b`)) });
  });
});
