/**
 * The autonomy policy (src/edge/autonomy.ts): the duration flag, and the
 * tolerations a pod bound to an edge node gets. Generated pods are checked
 * against the simulated API server's copy of Kubernetes' toleration update
 * rule and taint eviction arithmetic (test/support/sim-apiserver/
 * node-lifecycle.ts), so a patch the API server would refuse, or one that
 * would still evict too early, fails here.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  autonomyTolerations,
  formatAutonomyDuration,
  nodeAutonomyDuration,
  parseAutonomyDuration,
  type PodLike,
  type PodToleration,
} from '../../../src/edge/autonomy.js';
import { ValidationError } from '../../../src/errors.js';
import {
  matchingTolerations,
  minTolerationSeconds,
  tolerationUpdateError,
  withDefaultTolerations,
} from '../../support/sim-apiserver/node-lifecycle.js';

const UNREACHABLE = { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' };
const NOT_READY = { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' };

function pod(tolerations: PodToleration[], extra: Partial<PodLike['metadata']> = {}): PodLike {
  return { metadata: { name: 'p', namespace: 'default', ...extra }, spec: { nodeName: 'edge-1', tolerations } };
}

describe('parseAutonomyDuration', () => {
  it('takes Go durations in whole seconds, and 0 for never', () => {
    expect(parseAutonomyDuration('24h')).toEqual({ kind: 'seconds', seconds: 86_400 });
    expect(parseAutonomyDuration('1h30m')).toEqual({ kind: 'seconds', seconds: 5_400 });
    expect(parseAutonomyDuration('0')).toEqual({ kind: 'forever' });
    expect(parseAutonomyDuration('0s')).toEqual({ kind: 'forever' });
  });

  it.each(['', '-5m', '1.5s', '500ms', '10', 'forever', '5 minutes'])('refuses %j with E_DURATION_INVALID', (text) => {
    const error = (() => {
      try {
        parseAutonomyDuration(text);
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe('E_DURATION_INVALID');
    expect((error as Error).message).toContain('--autonomy-duration');
  });

  it('writes the annotation back in the form it reads', () => {
    for (const text of ['24h', '90s', '0', '72h']) {
      const parsed = parseAutonomyDuration(text);
      expect(nodeAutonomyDuration({ 'edgeadm.io/autonomy-duration': formatAutonomyDuration(parsed) })).toEqual(parsed);
    }
    expect(nodeAutonomyDuration({ 'edgeadm.io/autonomy-duration': 'soon' })).toBeUndefined();
    expect(nodeAutonomyDuration({})).toBeUndefined();
  });
});

describe('autonomyTolerations', () => {
  const defaults = withDefaultTolerations([])!;

  it("sets the DefaultTolerationSeconds tolerations' seconds to the duration", () => {
    expect(autonomyTolerations(pod(defaults), { kind: 'seconds', seconds: 86_400 })).toEqual([
      { ...NOT_READY, operator: 'Exists', tolerationSeconds: 86_400 },
      { ...UNREACHABLE, operator: 'Exists', tolerationSeconds: 86_400 },
    ]);
  });

  it('drops the seconds for 0 (tolerate for ever), and changes nothing twice', () => {
    const forever = autonomyTolerations(pod(defaults), { kind: 'forever' })!;
    expect(forever).toEqual([
      { ...NOT_READY, operator: 'Exists' },
      { ...UNREACHABLE, operator: 'Exists' },
    ]);
    expect(autonomyTolerations(pod(forever), { kind: 'forever' })).toBeUndefined();
  });

  it('puts them before a wildcard toleration with seconds of its own, which would otherwise decide', () => {
    const wildcard = { operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 };
    const next = autonomyTolerations(pod([wildcard, ...defaults]), { kind: 'seconds', seconds: 600 })!;
    expect(next.at(-1)).toEqual(wildcard);
    expect(minTolerationSeconds(matchingTolerations([UNREACHABLE], next)!)).toBe(600);
  });

  it('adds the tolerations a pod lacks (an API server without DefaultTolerationSeconds)', () => {
    expect(autonomyTolerations(pod([]), { kind: 'seconds', seconds: 60 })).toEqual([
      { ...NOT_READY, operator: 'Exists', tolerationSeconds: 60 },
      { ...UNREACHABLE, operator: 'Exists', tolerationSeconds: 60 },
    ]);
  });

  it('leaves DaemonSet pods, mirror pods and pods being deleted alone', () => {
    const duration = { kind: 'seconds', seconds: 60 } as const;
    expect(autonomyTolerations(pod(defaults, { ownerReferences: [{ kind: 'DaemonSet' }] }), duration)).toBeUndefined();
    expect(
      autonomyTolerations(pod(defaults, { annotations: { 'kubernetes.io/config.mirror': 'x' } }), duration),
    ).toBeUndefined();
    expect(autonomyTolerations(pod(defaults, { deletionTimestamp: '2026-01-01T00:00:00Z' }), duration)).toBeUndefined();
  });

  // Valid tolerations only (ValidateTolerations): an empty key needs Exists, Exists no value,
  // tolerationSeconds the NoExecute effect.
  const tolerationArb: fc.Arbitrary<PodToleration> = fc
    .record({
      key: fc.constantFrom('node.kubernetes.io/unreachable', 'node.kubernetes.io/not-ready', 'dedicated', ''),
      operator: fc.constantFrom('Exists', 'Equal'),
      value: fc.constantFrom('', 'a'),
      effect: fc.constantFrom('NoExecute', 'NoSchedule', ''),
      tolerationSeconds: fc.option(fc.integer({ min: 0, max: 100_000 }), { nil: undefined }),
    })
    .map(({ key, operator, value, effect, tolerationSeconds }) => {
      const op = key === '' ? 'Exists' : operator;
      return {
        key,
        operator: op,
        ...(op === 'Equal' && value !== '' ? { value } : {}),
        ...(effect !== '' ? { effect } : {}),
        ...(effect === 'NoExecute' && tolerationSeconds !== undefined ? { tolerationSeconds } : {}),
      };
    });
  const durationArb = fc.oneof(
    fc.constant({ kind: 'forever' } as const),
    fc.integer({ min: 1, max: 1_000_000 }).map((seconds) => ({ kind: 'seconds', seconds }) as const),
  );

  it('only ever patches what the API server accepts, and then tolerates the node lifecycle taints for the duration', () => {
    fc.assert(
      fc.property(fc.array(tolerationArb, { maxLength: 5 }), durationArb, (given, duration) => {
        // What the pod holds after admission.
        const admitted = withDefaultTolerations(given) ?? given;
        const next = autonomyTolerations(pod(admitted), duration);
        const result = next ?? admitted;
        if (next !== undefined) expect(tolerationUpdateError(admitted, next)).toBeUndefined();
        for (const taint of [UNREACHABLE, NOT_READY]) {
          const used = matchingTolerations([taint], result)!;
          expect(used).toBeDefined();
          const seconds = minTolerationSeconds(used);
          // Tolerated at least as long as asked: for ever, or the duration (a pod's own "for ever" is kept).
          if (duration.kind === 'forever') expect(seconds).toBe(-1);
          else expect(seconds === -1 || seconds === duration.seconds).toBe(true);
        }
        // Idempotent: a second pass changes nothing.
        expect(autonomyTolerations(pod(result), duration)).toBeUndefined();
      }),
    );
  });
});
