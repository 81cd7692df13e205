import { describe, expect, it } from 'vitest';
import { initHostEvents } from '../../../src/cli/fleet-run.js';
import type { WorkflowEvent } from '../../../src/workflow/events.js';

const time = '2026-11-28T00:00:00.000Z';

describe('fleet up: the host events of the control plane it inits (newcomer point 23)', () => {
  function run(events: WorkflowEvent[]): string[] {
    const emitted: Array<{ type: string; host?: unknown }> = [];
    const onEvent = initHostEvents({ emitEvent: (event) => emitted.push(event) }, { host: 'cp1', lastPhase: 'show' });
    for (const event of events) onEvent(event);
    return emitted.map((event) => `${event.type} ${String(event.host)}`);
  }

  it('has host-started before its phases and host-done after its last, as every other host', () => {
    expect(
      run([
        { type: 'phase-started', time, host: 'cp1', phase: 'preflight', summary: 's' },
        {
          type: 'phase-finished',
          time,
          host: 'cp1',
          phase: 'preflight',
          outcome: 'checked',
          status: 'unchanged',
          durationMs: 1,
        },
        { type: 'phase-skipped', time, host: 'cp1', phase: 'show', reason: 'r' },
        { type: 'phase-started', time, host: 'cp2', phase: 'preflight', summary: 's' },
      ]),
    ).toEqual([
      'fleet-wave undefined',
      'host-started cp1',
      'phase-started cp1',
      'phase-finished cp1',
      'phase-skipped cp1',
      'host-done cp1',
      'phase-started cp2',
    ]);
  });

  it('has host-failed when a phase fails', () => {
    expect(
      run([
        { type: 'phase-started', time, host: 'cp1', phase: 'preflight', summary: 's' },
        {
          type: 'phase-failed',
          time,
          host: 'cp1',
          phase: 'preflight',
          durationMs: 1,
          error: { code: 'E_PREFLIGHT', message: 'm' },
        },
      ]),
    ).toEqual(['fleet-wave undefined', 'host-started cp1', 'phase-started cp1', 'phase-failed cp1', 'host-failed cp1']);
  });
});
