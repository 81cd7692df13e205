import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isWindowOpen,
  nextOpening,
  parseMaintenanceWindow,
  windowClosedMessage,
} from '../../../src/fleet/maintenance-window.js';
import { runRollout } from '../../../src/fleet/rollout.js';
import { newRunState } from '../../../src/fleet/run-state.js';

const at = (iso: string): Date => new Date(iso);

describe('the maintenance window', () => {
  it('a daily window across midnight is open from its start to its end, UTC', () => {
    const window = parseMaintenanceWindow({ start: '22:00', end: '04:00' })!;
    expect(isWindowOpen(window, at('2026-11-24T22:00:00Z'))).toBe(true);
    expect(isWindowOpen(window, at('2026-11-25T03:59:59Z'))).toBe(true);
    expect(isWindowOpen(window, at('2026-11-25T04:00:00Z'))).toBe(false);
    expect(isWindowOpen(window, at('2026-11-24T21:59:00Z'))).toBe(false);
    expect(nextOpening(window, at('2026-11-25T04:00:00Z'))?.toISOString()).toBe('2026-11-25T22:00:00.000Z');
  });

  it('an ISO interval (START/END or START/DURATION) is open once', () => {
    const window = parseMaintenanceWindow({ interval: '2026-11-24T22:00Z/PT6H' })!;
    expect(window).toMatchObject({ kind: 'interval', text: '2026-11-24T22:00:00.000Z/2026-11-25T04:00:00.000Z' });
    expect(isWindowOpen(window, at('2026-11-25T01:00:00Z'))).toBe(true);
    expect(isWindowOpen(window, at('2026-11-25T04:00:00Z'))).toBe(false);
    expect(nextOpening(window, at('2026-11-25T05:00:00Z'))).toBeUndefined();
    expect(windowClosedMessage(window, at('2026-11-25T05:00:00Z'), 'r1')).toContain('is over');
    expect(windowClosedMessage(window, at('2026-11-24T12:00:00Z'), 'r1')).toContain(
      'opens again at 2026-11-24T22:00:00.000Z: run fleet upgrade --resume r1 then',
    );
  });

  it('refuses malformed windows', () => {
    for (const input of [
      { start: '22:00' },
      { start: '24:00', end: '01:00' },
      { start: '10:00', end: '10:00' },
      { interval: '2026-11-24T22:00/PT6H' },
      { interval: '2026-11-24T22:00Z/2026-11-24T21:00Z' },
      { interval: '2026-11-24T22:00Z/PT6H', start: '01:00', end: '02:00' },
    ]) {
      expect(() => parseMaintenanceWindow(input), JSON.stringify(input)).toThrow(
        expect.objectContaining({ code: 'E_FLEET_WINDOW' }),
      );
    }
    expect(parseMaintenanceWindow({})).toBeUndefined();
  });

  it('a daily window is open exactly when the next opening is later than the last start (property)', () => {
    const minute = fc.integer({ min: 0, max: 24 * 60 - 1 });
    const hhmm = (m: number): string =>
      `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
    fc.assert(
      fc.property(minute, minute, fc.integer({ min: 0, max: 7 * 24 * 60 }), (start, end, offset) => {
        fc.pre(start !== end);
        const window = parseMaintenanceWindow({ start: hhmm(start), end: hhmm(end) })!;
        const now = new Date(Date.UTC(2026, 0, 1) + offset * 60_000);
        const opening = nextOpening(window, now)!;
        expect(opening.getTime()).toBeGreaterThan(now.getTime());
        expect(opening.getTime() - now.getTime()).toBeLessThanOrEqual(24 * 60 * 60_000);
        expect(isWindowOpen(window, opening)).toBe(true);
        expect(isWindowOpen(window, new Date(opening.getTime() - 60_000))).toBe(false);
      }),
    );
  });

  it('the rollout starts no host once the start gate closes; the running one finishes; the rest are skipped with its message', async () => {
    const state = newRunState({ command: 'upgrade', inventory: 'i', hosts: ['a', 'b', 'c'], now: new Date(0) });
    let isOpen = true;
    const started: string[] = [];
    await runRollout({
      state,
      concurrency: 1,
      now: () => 0,
      startGate: () => (isOpen ? undefined : { reason: 'maintenance-window', message: 'not started: window closed' }),
      task: async (host) => {
        started.push(host);
        isOpen = false; // the window closes while the first host runs
      },
    });
    expect(started).toEqual(['a']);
    expect(state.hosts.a?.status).toBe('done');
    expect(state.stopReason).toBe('maintenance-window');
    expect(state.hosts.b).toMatchObject({ status: 'skipped', error: { message: 'not started: window closed' } });
  });
});
