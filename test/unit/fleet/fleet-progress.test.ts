import { describe, expect, it } from 'vitest';
import {
  MAX_PROGRESS_HOST_LINES,
  plainProgress,
  progressLine,
  runningHostLines,
} from '../../../src/fleet/fleet-progress.js';
import { newRunState } from '../../../src/fleet/run-state.js';

function state(names: string[]) {
  return newRunState({ command: 'check', inventory: 'i', hosts: names, now: new Date(0), id: 'r' });
}

describe('fleet progress', () => {
  it('prints one timestamped line per host event with the counts', () => {
    const run = state(['a', 'b']);
    run.hosts.a = { status: 'failed', attempts: 1 };
    const lines: string[] = [];
    const progress = plainProgress((line) => lines.push(line));
    progress.onEvent({ type: 'failed', host: 'a', attempt: 1, error: { code: 'E_X', message: 'boom' } }, run);
    progress.onEvent({ type: 'phase', host: 'b', phase: 'check' }, run);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z a: FAILED: E_X: boom \[0 done, 1 failed, 0 running, 1 pending\]$/,
    );
    expect(progressLine({ type: 'stopped', reason: 'cancelled', skipped: ['b'] }, run, new Date(0))).toBe(
      '1970-01-01T00:00:00.000Z stopped (cancelled): 1 host not started',
    );
  });

  it('lists running hosts with their phase, bounded', () => {
    const names = Array.from({ length: MAX_PROGRESS_HOST_LINES + 5 }, (_, i) => `h${i}`);
    const run = state(names);
    for (const name of names) run.hosts[name] = { status: 'running', attempts: 1, phase: 'connect' };
    const lines = runningHostLines(run);
    expect(lines[0]).toBe('h0: connect');
    expect(lines).toHaveLength(MAX_PROGRESS_HOST_LINES + 1);
    expect(lines.at(-1)).toBe('… and 5 more');
  });
});
