import { describe, expect, it } from 'vitest';
import { applyWatchEvent, diffLists, isKubeList, type KubeListLike } from '../../../src/edge/list-patch.js';

function obj(name: string, rv: string, extra: Record<string, unknown> = {}) {
  return { metadata: { name, namespace: 'default', resourceVersion: rv }, ...extra };
}

function list(...items: ReturnType<typeof obj>[]): KubeListLike {
  return { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '10' }, items };
}

describe('applyWatchEvent', () => {
  it('adds, modifies and deletes objects and moves the list resourceVersion', () => {
    const l = list(obj('a', '5'));
    expect(applyWatchEvent(l, { type: 'ADDED', object: obj('b', '11') })).toBe(true);
    expect(applyWatchEvent(l, { type: 'MODIFIED', object: obj('a', '12', { spec: 'new' }) })).toBe(true);
    expect(applyWatchEvent(l, { type: 'DELETED', object: obj('b', '13') })).toBe(true);
    expect(l.items).toEqual([obj('a', '12', { spec: 'new' })]);
    expect(l.metadata?.resourceVersion).toBe('13');
  });

  it('moves only the resourceVersion on a bookmark, and ignores errors', () => {
    const l = list(obj('a', '5'));
    expect(applyWatchEvent(l, { type: 'BOOKMARK', object: { metadata: { resourceVersion: '20' } } })).toBe(true);
    expect(applyWatchEvent(l, { type: 'ERROR', object: { metadata: {} } })).toBe(false);
    expect(l.items).toHaveLength(1);
    expect(l.metadata?.resourceVersion).toBe('20');
  });

  it('never lets an older event overwrite a newer object (two streams feed one list)', () => {
    const l = list(obj('a', '15', { spec: 'newer' }));
    applyWatchEvent(l, { type: 'MODIFIED', object: obj('a', '12', { spec: 'older' }) });
    applyWatchEvent(l, { type: 'DELETED', object: obj('a', '13') });
    expect(l.items).toEqual([obj('a', '15', { spec: 'newer' })]);
  });

  it('tells lists from other objects', () => {
    expect(isKubeList(list())).toBe(true);
    expect(isKubeList({ kind: 'Pod', metadata: {} })).toBe(false);
    expect(isKubeList(null)).toBe(false);
  });
});

describe('diffLists', () => {
  it('gives the events that take a client from one list to the next', () => {
    const before = list(obj('kept', '1'), obj('changed', '2'), obj('gone', '3'));
    const after = list(obj('kept', '1'), obj('changed', '9'), obj('new', '10'));
    expect(diffLists(before, after)).toEqual([
      { type: 'MODIFIED', object: obj('changed', '9') },
      { type: 'ADDED', object: obj('new', '10') },
      { type: 'DELETED', object: obj('gone', '3') },
    ]);
  });

  it('applied to the old list, yields the new one', () => {
    const before = list(obj('x', '1'), obj('y', '2'));
    const after = list(obj('y', '4'), obj('z', '5'));
    for (const event of diffLists(before, after)) applyWatchEvent(before, event);
    expect(before.items.map((item) => item.metadata?.name).sort()).toEqual(['y', 'z']);
  });
});
