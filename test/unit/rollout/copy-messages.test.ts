/**
 * The agent's reading of rollout control messages (src/rollout/copy-messages.ts):
 * what the hub renders passes, what the agent could not apply safely does not.
 */
import { describe, expect, it } from 'vitest';
import { parseCopyMessage, parseRemoveMessage } from '../../../src/rollout/copy-messages.js';
import { copyMessage, copyOf } from '../../support/rollout-agent-fixture.js';

describe('parseCopyMessage', () => {
  it('takes what the hub renders and refuses what the agent cannot apply', () => {
    const message = copyMessage(copyOf(1));
    expect(parseCopyMessage(JSON.parse(JSON.stringify(message)))).toEqual({ ok: true, value: message });
    expect(parseCopyMessage({ ...message, owner: { user: '', groups: [] } }).ok).toBe(false);
    expect(parseCopyMessage({ ...message, copy: { revision: '1 2', objects: [] } }).ok).toBe(false);
    expect(parseCopyMessage({ ...message, copy: { revision: '1-a', objects: [{ kind: 'ConfigMap' }] } }).ok).toBe(
      false,
    );
  });
});

describe('parseRemoveMessage', () => {
  it('takes a rollout and an owner, and refuses a name that is not a DNS label', () => {
    expect(parseRemoveMessage({ rollout: 'web', owner: { user: 'ops', groups: ['a'] } })).toEqual({
      ok: true,
      value: { rollout: 'web', owner: { user: 'ops', groups: ['a'] } },
    });
    expect(parseRemoveMessage({ rollout: 'Web/..', owner: { user: 'ops', groups: [] } }).ok).toBe(false);
    expect(parseRemoveMessage({ rollout: 'web', owner: { user: 'ops', groups: ['\n'] } }).ok).toBe(false);
  });
});
