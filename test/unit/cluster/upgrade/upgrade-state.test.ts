import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isUnfinished, parseUpgradeState, type UpgradeState } from '../../../../src/cluster/upgrade/upgrade-state.js';

const steps = ['backing-up', 'backed-up', 'swapped', 'rolling-back', 'done', 'rolled-back'] as const;

const stateArb: fc.Arbitrary<UpgradeState> = fc.record({
  version: fc.constant(1 as const),
  step: fc.constantFrom(...steps),
  from: fc.string(),
  to: fc.string(),
  package: fc.string(),
  nodeName: fc.string(),
});

const sha256Arb = fc.stringMatching(/^[0-9a-f]{64}$/);

describe('the upgrade state file', () => {
  it('reads back every state edgeadm writes', () => {
    fc.assert(
      fc.property(stateArb, (state) => {
        expect(parseUpgradeState(JSON.stringify(state, null, 2), 'h:/s')).toEqual(state);
      }),
    );
  });

  it('refuses anything else with E_UPGRADE_STATE_INVALID rather than guessing a step', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value);
        let parsed: UpgradeState | undefined;
        try {
          parsed = parseUpgradeState(text, 'h:/s');
        } catch (error) {
          expect(error).toMatchObject({ code: 'E_UPGRADE_STATE_INVALID' });
          return;
        }
        expect(steps).toContain(parsed.step);
      }),
    );
    for (const text of [
      '',
      '{',
      '{"version":1,"step":"half-swapped","from":"a","to":"b","package":"p","nodeName":"n"}',
    ]) {
      expect(() => parseUpgradeState(text, 'h:/s')).toThrow(
        expect.objectContaining({ code: 'E_UPGRADE_STATE_INVALID' }),
      );
    }
  });

  it('counts the steps between stopping k3s and the end of the gates or the rollback as unfinished', () => {
    expect(steps.filter(isUnfinished)).toEqual(['backing-up', 'backed-up', 'swapped', 'rolling-back']);
  });

  it("keeps the backup's hashes, and refuses a state whose hashes are not SHA-256 (a rollback checks against them)", () => {
    fc.assert(
      fc.property(stateArb, fc.dictionary(fc.string({ minLength: 1 }), sha256Arb), (state, backupSha256) => {
        const withHashes = { ...state, backupSha256 };
        expect(parseUpgradeState(JSON.stringify(withHashes), 'h:/s')).toEqual(withHashes);
      }),
    );
    const base = { version: 1, step: 'backed-up', from: 'a', to: 'b', package: 'p', nodeName: 'n' };
    for (const backupSha256 of [{ k3s: 'not-a-hash' }, ['x'], 'x', { '': 'a'.repeat(64) }]) {
      expect(() => parseUpgradeState(JSON.stringify({ ...base, backupSha256 }), 'h:/s')).toThrow(
        expect.objectContaining({ code: 'E_UPGRADE_STATE_INVALID' }),
      );
    }
  });
});
