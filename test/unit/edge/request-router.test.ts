import { describe, expect, it } from 'vitest';
import { badPathStatus, watchQuotaStatus } from '../../../src/edge/request-router.js';

describe('the router refusals', () => {
  it('answers a path without one reading 400 BadRequest and says why', () => {
    expect(badPathStatus('the path has a ".." segment')).toMatchObject({
      kind: 'Status',
      code: 400,
      reason: 'BadRequest',
      message: expect.stringContaining('the path has a ".." segment; request paths are forwarded only when'),
    });
  });

  it('answers a watch beyond its quota 429 with the bound it hit and a Retry-After', () => {
    const quota = { perIdentity: 250, total: 1000 };
    const mine = watchQuotaStatus('identity', quota);
    expect(mine).toMatchObject({ code: 429, reason: 'TooManyRequests', details: { retryAfterSeconds: 5 } });
    expect(mine.message).toContain('already has 250 open watches');
    expect(watchQuotaStatus('total', quota).message).toContain('1000 watches are open');
  });
});
