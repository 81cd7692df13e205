/** The pass's pure pieces (src/hub/rollouts/rollout-pass.ts): fresh copies for changed clusters, and the next wake. */
import { describe, expect, it } from 'vitest';
import { nextWakeAt, refreshChangedCopies } from '../../../../src/hub/rollouts/rollout-pass.js';
import { renderCopy } from '../../../../src/rollout/render.js';
import { clusterRecord, liveRollout } from './controller-fakes.js';

describe('the rollout pass', () => {
  it('sends a cluster back to waiting when its copy renders differently now, and no other', () => {
    const live = liveRollout();
    const target = (name: string, labels: Record<string, string>) => {
      const rendered = renderCopy(live.spec, live.record.revision, { name, labels, properties: {} });
      if (!rendered.ok) throw new Error('does not render');
      return rendered.copy.revision;
    };
    const labels = { env: 'prod', region: 'eu' };
    live.record.progress.clusters = {
      a: { wave: 0, phase: 'ready', targetRevision: target('a', labels) },
      b: { wave: 0, phase: 'ready', targetRevision: target('b', labels) },
    };
    live.unconfirmed.add('a');
    const previous = new Map([
      ['a', clusterRecord('a')],
      ['b', clusterRecord('b')],
    ]);
    const now = [
      clusterRecord('a', { labels: { env: 'prod', region: 'us' } }),
      clusterRecord('b', { labels: { ...labels, tier: 'x' } }),
    ];
    refreshChangedCopies([live], now, previous);
    expect(live.record.progress.clusters.a).toEqual({ wave: 0, phase: 'waiting' });
    expect(live.record.progress.clusters.b?.phase).toBe('ready');
    expect(live.unconfirmed.has('a')).toBe(false);
  });

  it('wakes at the earliest soak end or delivery deadline of a progressing rollout', () => {
    const soaking = liveRollout('soaking', { soakSeconds: 60 });
    soaking.record.progress.waveDoneSince = 10_000;
    const applying = liveRollout('applying', { deadlineSeconds: 600 });
    applying.record.progress.clusters = {
      a: { wave: 0, phase: 'applying', targetRevision: '1-x', deliveredAt: 5_000 },
    };
    expect(nextWakeAt([soaking, applying])).toBe(70_000);
    expect(nextWakeAt([applying])).toBe(605_001);
    applying.record.progress.state = 'paused';
    expect(nextWakeAt([applying])).toBe(Number.POSITIVE_INFINITY);
  });
});
