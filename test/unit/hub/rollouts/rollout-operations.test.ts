/** Pause, resume and abort as a state machine (nextState in src/hub/rollouts/rollout-operations.ts). */
import { describe, expect, it } from 'vitest';
import { nextState } from '../../../../src/hub/rollouts/rollout-operations.js';

describe("the operator's commands", () => {
  it('moves a rollout between states as pause, resume and abort say, and refuses the rest with a hint', () => {
    expect(nextState('web', 'pause', 'progressing')).toBe('paused');
    expect(nextState('web', 'pause', 'complete')).toBe('paused');
    expect(nextState('web', 'pause', 'paused')).toBe('paused');
    expect(nextState('web', 'resume', 'paused')).toBe('progressing');
    expect(nextState('web', 'resume', 'halted')).toBe('progressing');
    expect(nextState('web', 'resume', 'progressing')).toBe('progressing');
    expect(nextState('web', 'abort', 'halted')).toBe('aborted');
    expect(() => nextState('web', 'pause', 'aborted')).toThrow(
      'rollout "web" is aborted; cannot pause it: apply a fixed revision or undo to the previous one',
    );
    expect(() => nextState('web', 'resume', 'complete')).toThrow(
      'rollout "web" is complete; cannot resume it: it has nothing left to do',
    );
  });
});
