import { describe, expect, it } from 'vitest';
import {
  formatTokenLabelLimit,
  labelsOutsideLimit,
  parseTokenLabelLimit,
} from '../../../../src/hub/identity/token-labels.js';

describe('token label limits', () => {
  it('parses env=dev,site=* and prints it back', () => {
    const limit = parseTokenLabelLimit('env=dev, site=*');
    expect(limit).toEqual({ env: 'dev', site: '*' });
    expect(formatTokenLabelLimit(limit)).toBe('env=dev,site=*');
    for (const bad of ['', 'env', 'env=a=b', 'a b=c', 'env=x*']) {
      expect(() => parseTokenLabelLimit(bad), bad).toThrow(/invalid label limit/);
    }
  });

  it('takes exactly the limit’s keys, each with its value or any value for *', () => {
    const limit = { env: 'dev', site: '*' };
    expect(labelsOutsideLimit({ env: 'dev', site: 'x' }, limit)).toBeUndefined();
    expect(labelsOutsideLimit({ env: 'prod', site: 'x' }, limit)).toMatch(/env="prod" is not allowed/);
    expect(labelsOutsideLimit({ site: 'x' }, limit)).toMatch(/"env" is required/);
    expect(labelsOutsideLimit({ env: 'dev', site: 'x', region: 'eu' }, limit)).toMatch(/"region" is not one/);
  });
});
