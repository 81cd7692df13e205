import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WatchQuota } from '../../../src/edge/watch-quota.js';

describe('WatchQuota', () => {
  it('never holds more slots than its bounds, per identity or in all, whatever the order of opens and closes', () => {
    const step = fc.oneof(
      fc.record({ open: fc.constantFrom('a', 'b', 'c') }),
      fc.record({ close: fc.nat() }),
      fc.record({ closeTwice: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const quota = new WatchQuota(3, 5);
        const held: { identity: string; release: () => void }[] = [];
        for (const action of steps) {
          if ('open' in action) {
            const slot = quota.tryAcquire(action.open);
            const mine = held.filter((h) => h.identity === action.open).length;
            if (mine >= 3) expect(slot).toEqual({ refusal: 'identity' });
            else if (held.length >= 5) expect(slot).toEqual({ refusal: 'total' });
            else if ('release' in slot) held.push({ identity: action.open, release: slot.release });
            else throw new Error(`refused with room left: ${JSON.stringify(slot)}`);
          } else if (held.length > 0) {
            const index = ('close' in action ? action.close : action.closeTwice) % held.length;
            const [gone] = held.splice(index, 1);
            gone!.release();
            if ('closeTwice' in action) gone!.release(); // a second release gives nothing back twice
          }
          expect(quota.open).toBe(held.length);
          for (const identity of ['a', 'b', 'c']) {
            expect(quota.openOf(identity)).toBe(held.filter((h) => h.identity === identity).length);
          }
        }
      }),
    );
  });
});
