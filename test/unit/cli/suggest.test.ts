import { describe, expect, it } from 'vitest';
import { editDistance, suggestCommands } from '../../../src/cli/suggest.js';

const IDS = ['token:list', 'token:create', 'token:delete', 'hub:serve', 'hub:token:create', 'init', 'join', 'reset'];

describe('suggestCommands (newcomer point 18)', () => {
  it('suggests the command one letter away, as typed', () => {
    expect(suggestCommands('tokens:list', IDS)[0]).toBe('token list');
    expect(suggestCommands('hub serv', IDS)).toEqual(['hub serve']);
  });

  it('suggests a topic’s commands for a misspelt topic alone, or the topic when it is known', () => {
    expect(suggestCommands('tokens', IDS)).toEqual(['token create', 'token delete', 'token list']);
    expect(suggestCommands('tokens', [...IDS, 'token'])).toEqual(['token']);
  });

  it('suggests nothing for input far from every command', () => {
    expect(suggestCommands('frobnicate', IDS)).toEqual([]);
    expect(suggestCommands('', IDS)).toEqual([]);
  });
});

describe('editDistance', () => {
  it('counts insertions, deletions and substitutions', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('same', 'same')).toBe(0);
  });
});
