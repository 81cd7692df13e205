/**
 * The agent's reading of rollout control messages (src/rollout/copy-messages.ts):
 * what the hub renders passes, what the agent could not apply safely does not.
 */
import { EventEmitter } from 'node:events';
import type { ServerHttp2Stream } from 'node:http2';
import { describe, expect, it } from 'vitest';
import { parseCopyMessage, parseRemoveMessage, ReadBudget, readMessage } from '../../../src/rollout/copy-messages.js';
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

describe('readMessage', () => {
  /** A control stream the test feeds; it records the statuses answered. */
  function fedStream() {
    const stream = Object.assign(new EventEmitter(), {
      statuses: [] as number[],
      destroyed: false,
      headersSent: false,
      respond(headers: Record<string, unknown>) {
        stream.statuses.push(Number(headers[':status']));
        stream.headersSent = true;
      },
      end: () => undefined,
      close: () => undefined,
      setTimeout: () => undefined,
    });
    return stream;
  }
  const asStream = (stream: ReturnType<typeof fedStream>): ServerHttp2Stream => stream as unknown as ServerHttp2Stream;

  it('answers 503 to a message that would take the bytes read at once past the budget, and gives them back', async () => {
    const budget = new ReadBudget(100);
    const first = fedStream();
    const firstText = readMessage(asStream(first), {}, 1000, budget);
    first.emit('data', Buffer.alloc(60, 0x20));
    const second = fedStream();
    const secondText = readMessage(asStream(second), {}, 1000, budget);
    second.emit('data', Buffer.alloc(60, 0x20));
    expect(second.statuses).toEqual([503]);
    expect(await secondText).toBeUndefined();
    first.emit('data', Buffer.from('{}'));
    first.emit('end');
    expect(await firstText).toHaveLength(62);
    expect(first.statuses).toEqual([]);
    expect(budget.held).toBe(0);
    // With the first one read, there is room again.
    const third = fedStream();
    const thirdText = readMessage(asStream(third), {}, 1000, budget);
    third.emit('data', Buffer.alloc(90, 0x20));
    third.emit('end');
    expect(await thirdText).toHaveLength(90);
    expect(third.statuses).toEqual([]);
  });

  it('answers 413 past its own limit and gives the budget back', async () => {
    const budget = new ReadBudget(1000);
    const stream = fedStream();
    const text = readMessage(asStream(stream), {}, 50, budget);
    stream.emit('data', Buffer.alloc(40));
    stream.emit('data', Buffer.alloc(40));
    expect(stream.statuses).toEqual([413]);
    expect(await text).toBeUndefined();
    expect(budget.held).toBe(0);
  });
});
