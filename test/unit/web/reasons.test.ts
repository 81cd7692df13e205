/** The attention list's reasons as the web view words them (web/src/reasons.ts). */
import { describe, expect, it } from 'vitest';
import { reasonText } from '../../../web/src/reasons.js';

const now = Date.parse('2026-11-28T21:43:10.000Z');

describe('reasonText', () => {
  it('says what is wrong and since when, in a sentence', () => {
    expect(reasonText({ kind: 'offline', since: '2026-11-28T18:43:10.000Z', isNeverConnected: false }, now)).toBe(
      'last seen 3 h ago',
    );
    expect(reasonText({ kind: 'offline', since: '2026-11-01T00:00:00.000Z', isNeverConnected: true }, now)).toBe(
      'never connected',
    );
    expect(
      reasonText(
        {
          kind: 'rollout-halted',
          since: '2026-11-28T00:00:00.000Z',
          rollouts: [
            { rollout: 'web', phase: 'failed' },
            { rollout: 'dns', phase: 'waiting' },
          ],
        },
        now,
      ),
    ).toBe('rollout web halted (failed here), rollout dns halted (waiting here)');
    expect(
      reasonText(
        {
          kind: 'nodes-not-ready',
          ready: 3,
          total: 10,
          notReady: ['n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7'],
          reportedAt: '2026-11-28T21:43:00.000Z',
        },
        now,
      ),
    ).toBe('7 of 10 nodes not Ready: n1, n2, n3, n4, n5 +2');
    expect(
      reasonText(
        {
          kind: 'certificate-expiring',
          certificates: [
            { kind: 'apiserver-serving', subject: 'CN=kube-apiserver', notAfter: '2026-11-26T21:43:10.000Z' },
            { kind: 'hub-client', subject: 'CN=shop-1', notAfter: '2026-12-05T21:43:10.000Z' },
          ],
        },
        now,
      ),
    ).toBe('API server certificate expired 2 d ago, agent’s hub client certificate expires in 7 d');
    expect(reasonText({ kind: 'held', since: '2026-11-28T00:00:00.000Z', by: 'alice', reason: 'inventory' }, now)).toBe(
      'held by alice: inventory',
    );
  });
});
