import { describe, expect, it } from 'vitest';
import { isDns1123Label, isDns1123Subdomain, isLabelKey, isLabelValue, labelProblem } from '../../../src/kube/names.js';

describe('Kubernetes naming rules', () => {
  it('takes DNS-1123 labels and subdomains, and nothing else', () => {
    expect(['a', 'store-1', 'x'.repeat(63)].every(isDns1123Label)).toBe(true);
    expect(['', 'A', '-a', 'a-', 'a_b', 'a.b', 'x'.repeat(64)].some(isDns1123Label)).toBe(false);
    expect(['example.com', 'a.b-c.d'].every(isDns1123Subdomain)).toBe(true);
    expect(['a..b', '.a', 'a.', `${'x'.repeat(63)}.`.repeat(4) + 'x'].some(isDns1123Subdomain)).toBe(false);
  });

  it('takes label keys with an optional DNS prefix, and label values of at most 63', () => {
    expect(['env', 'example.com/tier', 'A_b.c-d', 'x'.repeat(63)].every(isLabelKey)).toBe(true);
    for (const key of [
      '',
      'a b',
      'a/b/c',
      '/a',
      'Example.com/a',
      'a\nb',
      '_a',
      'x'.repeat(64),
      `${'x'.repeat(254)}/a`,
    ]) {
      expect(isLabelKey(key), JSON.stringify(key)).toBe(false);
    }
    expect(['', 'dev', 'v1.30_rc-1'].every(isLabelValue)).toBe(true);
    expect(['-dev', 'dev ', 'a/b', 'x'.repeat(64), 'a\nb'].some(isLabelValue)).toBe(false);
  });

  it('names the first bad label', () => {
    expect(labelProblem({ env: 'dev' })).toBeUndefined();
    expect(labelProblem({ env: 'dev', 'a b': 'x' })).toMatch(/label key "a b"/);
    expect(labelProblem({ env: 3 })).toMatch(/not a string/);
    expect(labelProblem({ env: 'a\nb' })).toMatch(/has value "a\\nb"/);
  });
});
