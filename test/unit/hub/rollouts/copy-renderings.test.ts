/** The budget of copies in flight and the rendered copies kept for sharing (src/hub/rollouts/copy-renderings.ts). */
import { describe, expect, it, vi } from 'vitest';
import { CopyBudget, RenderedCopies, type Release } from '../../../../src/hub/rollouts/copy-renderings.js';
import { copyMessageJson } from '../../../../src/rollout/wire.js';
import { liveRollout } from './controller-fakes.js';

const facts = (name: string) => ({ name, labels: { env: 'prod', region: 'eu' }, properties: {} });

describe('the budget of copies in flight', () => {
  it('admits copies first come, first served, within the bytes and the count', async () => {
    const budget = new CopyBudget(100, 3);
    const granted: string[] = [];
    const releases = new Map<string, Release>();
    const ask = (name: string, weight: number) =>
      void budget.acquire(weight).then((release) => {
        granted.push(name);
        releases.set(name, release);
      });
    ask('a', 60);
    ask('b', 30);
    ask('c', 30); // would pass 100 bytes: waits, and so does everything behind it
    ask('d', 1);
    await Promise.resolve();
    expect(granted).toEqual(['a', 'b']);
    expect(budget.inFlight).toEqual({ count: 2, bytes: 90 });
    releases.get('a')!();
    releases.get('a')!(); // a second release changes nothing
    await Promise.resolve();
    expect(granted).toEqual(['a', 'b', 'c', 'd']);
    expect(budget.inFlight).toEqual({ count: 3, bytes: 61 });
  });

  it('lets a copy heavier than the whole budget go alone', async () => {
    const budget = new CopyBudget(10, 3);
    const first = await budget.acquire(50);
    let isSecond = false;
    void budget.acquire(1).then(() => (isSecond = true));
    await Promise.resolve();
    expect(isSecond).toBe(false);
    first();
    await Promise.resolve();
    expect(isSecond).toBe(true);
  });
});

describe('the rendered copies kept', () => {
  it('renders a copy once for the clusters that get the same one, and keeps no more than its bytes', () => {
    const live = liveRollout();
    // The fixture's ConfigMap carries the cluster's name: each cluster's copy is its own.
    const renderings = new RenderedCopies(live.documentText.length * 2);
    const revisionOf = (name: string) => {
      const rendered = renderings.render(live, 'unknown', facts(name));
      if (!rendered.ok) throw new Error('does not render');
      return rendered.copy.revision;
    };
    const a = revisionOf('a');
    expect(renderings.size.count).toBe(0); // rendered for a revision it does not name: not kept
    const first = renderings.render(live, a, facts('a'));
    expect(renderings.render(live, a, facts('a'))).toBe(first);
    renderings.render(live, revisionOf('b'), facts('b'));
    renderings.render(live, revisionOf('c'), facts('c'));
    expect(renderings.size).toEqual({ count: 2, bytes: live.documentText.length * 2 });
    // The oldest went.
    expect(renderings.render(live, a, facts('a'))).not.toBe(first);
  });
});

describe('a copy message as JSON', () => {
  it('is what JSON.stringify gives, the copy serialized once for every message that carries it', () => {
    const live = liveRollout();
    const rendered = new RenderedCopies().render(live, 'x', facts('a"b'));
    if (!rendered.ok) throw new Error('does not render');
    const stringify = vi.spyOn(JSON, 'stringify');
    const owners = [
      { user: 'alice', groups: ['ops'] },
      { user: 'bob\n', groups: [] },
    ];
    for (const owner of owners) {
      const message = { rollout: 'web', owner, copy: rendered.copy };
      expect(copyMessageJson(message)).toBe(JSON.stringify(message));
    }
    const copyCalls = stringify.mock.calls.filter(([value]) => value === rendered.copy).length;
    stringify.mockRestore();
    expect(copyCalls).toBe(1);
  });
});
