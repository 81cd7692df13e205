import { describe, expect, it } from 'vitest';
import { MAX_ERROR_WIDTH, renderFleetReport } from '../../../src/fleet/fleet-report.js';

describe('renderFleetReport', () => {
  it('shows host, result, duration, failing phase and reason, then the counts', () => {
    const lines = renderFleetReport([
      { host: 'store-1', status: 'done', durationMs: 1234, phase: 'check' },
      {
        host: 'store-22',
        status: 'failed',
        durationMs: 3000,
        phase: 'connect',
        error: { code: 'E_SSH_UNREACHABLE', message: 'cannot reach root@10.0.0.9:22' },
      },
      {
        host: 's3',
        status: 'failed',
        phase: 'check',
        error: { code: 'E_PREFLIGHT', message: 'long text' },
        failingChecks: ['swap', 'port-6443'],
      },
      { host: 's4', status: 'skipped', error: { code: 'E_FLEET_NOT_STARTED', message: 'not started' } },
    ]);
    expect(lines).toEqual([
      'HOST      RESULT   DURATION  PHASE    ERROR',
      'store-1   ok       1.2s      -        -',
      'store-22  FAILED   3.0s      connect  E_SSH_UNREACHABLE: cannot reach root@10.0.0.9:22',
      's3        FAILED   -         check    failing checks: swap, port-6443',
      's4        skipped  -         -        E_FLEET_NOT_STARTED: not started',
      '',
      '4 hosts: 1 ok, 2 failed, 1 skipped',
    ]);
  });

  it('shortens long errors', () => {
    const [, row] = renderFleetReport([
      { host: 'h', status: 'failed', error: { code: 'E', message: 'x'.repeat(500) } },
    ]);
    expect(row!.endsWith('…')).toBe(true);
    expect(row!.length).toBeLessThan(MAX_ERROR_WIDTH + 40);
  });

  it('shows the role of each host when asked (fleet up)', () => {
    const lines = renderFleetReport(
      [
        { host: 'cp1', role: 'control-plane (init)', status: 'done' },
        {
          host: 'cp2',
          role: 'control-plane',
          status: 'failed',
          phase: 'preflight',
          error: { code: 'E_PREFLIGHT', message: 'x' },
        },
        { host: 's1', role: 'worker', status: 'skipped' },
      ],
      { showRole: true },
    );
    expect(lines.slice(0, 4)).toEqual([
      'HOST  ROLE                  RESULT   DURATION  PHASE      ERROR',
      'cp1   control-plane (init)  ok       -         -          -',
      'cp2   control-plane         FAILED   -         preflight  E_PREFLIGHT: x',
      's1    worker                skipped  -         -          -',
    ]);
  });
});
