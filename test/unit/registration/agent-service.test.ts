/**
 * The agent's read-back period of copies that are not ready: the documented
 * default unless edgeadm's own tests shorten it, and never anything else.
 */
import { describe, expect, it } from 'vitest';
import { copyPollNotReadyMs } from '../../../src/registration/agent-service.js';
import { COPY_POLL_NOT_READY_MS, TEST_COPY_POLL_NOT_READY_ENV } from '../../../src/rollout/limits.js';

describe('the read-back period of a copy that is not ready', () => {
  it('is 2 s, as the rollout limits document, when the test variable is not set', () => {
    expect(COPY_POLL_NOT_READY_MS).toBe(2_000);
    expect(copyPollNotReadyMs({})).toBe(2_000);
    expect(copyPollNotReadyMs({ [TEST_COPY_POLL_NOT_READY_ENV]: '' })).toBe(2_000);
  });

  it("is the test variable's period when it is set", () => {
    expect(copyPollNotReadyMs({ [TEST_COPY_POLL_NOT_READY_ENV]: '200' })).toBe(200);
  });

  it('refuses a period that would spin, outlast the default, or is not a whole number', () => {
    for (const text of ['0', '5', '2001', '60000', '-100', '1.5', '1e3', 'fast']) {
      expect(() => copyPollNotReadyMs({ [TEST_COPY_POLL_NOT_READY_ENV]: text }), text).toThrow(
        expect.objectContaining({ code: 'E_TEST_COPY_POLL' }),
      );
    }
  });
});
