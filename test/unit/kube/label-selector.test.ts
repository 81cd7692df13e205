import { describe, expect, it } from 'vitest';
import { matchesSelector, parseLabels, parseLabelSelector } from '../../../src/kube/label-selector.js';

describe('label selectors', () => {
  it('matches equality, inequality and existence terms, all of them', () => {
    const selector = parseLabelSelector('env=dev,region!=eu,gpu,!legacy');
    expect(matchesSelector(selector, { env: 'dev', region: 'us', gpu: 'yes' })).toBe(true);
    expect(matchesSelector(selector, { env: 'prod', region: 'us', gpu: 'yes' })).toBe(false);
    expect(matchesSelector(selector, { env: 'dev', region: 'eu', gpu: 'yes' })).toBe(false);
    expect(matchesSelector(selector, { env: 'dev', gpu: 'yes', legacy: 'true' })).toBe(false);
    expect(matchesSelector(selector, { env: 'dev' })).toBe(false);
  });

  it('matches everything with an empty selector', () => {
    expect(matchesSelector(parseLabelSelector(''), {})).toBe(true);
  });

  it('refuses malformed selectors and labels with a typed error', () => {
    expect(() => parseLabelSelector('env=dev,,x')).toThrow(expect.objectContaining({ code: 'E_SELECTOR_INVALID' }));
    expect(() => parseLabelSelector('bad key=1')).toThrow(expect.objectContaining({ code: 'E_SELECTOR_INVALID' }));
    expect(() => parseLabels('env')).toThrow(expect.objectContaining({ code: 'E_LABELS_INVALID' }));
  });

  it('parses --labels into a map', () => {
    expect(parseLabels('env=dev, region=eu-west')).toEqual({ env: 'dev', region: 'eu-west' });
    expect(parseLabels('')).toEqual({});
  });

  it('reads terms with spaces around keys, operators and values as kubectl does', () => {
    expect(parseLabelSelector(' env = dev , region != eu , ! legacy ')).toEqual({
      terms: [
        { key: 'env', operator: 'equals', value: 'dev' },
        { key: 'region', operator: 'not-equals', value: 'eu' },
        { key: 'legacy', operator: 'not-exists' },
      ],
    });
    expect(parseLabelSelector('   ')).toEqual({ terms: [] });
  });

  const SELECTOR_HINT = 'A selector is comma-separated terms: key=value, key!=value, key or !key.';
  it.each([
    ['env=dev,,x', 'it has an empty term'],
    ['-bad=x', '"-bad" is not a label key'],
    ['env=-x', '"-x" is not a label value'],
    ['env!=x y', '"x y" is not a label value'],
    ['!-bad', '"-bad" is not a label key'],
    // A negation applies to existence only: "!env=dev" is not "env!=dev", and is not quietly read as "env=dev".
    ['!env=dev', '"env=dev" is not a label key'],
  ])('refuses the selector %s: %s', (text, why) => {
    expect(() => parseLabelSelector(text)).toThrow(
      expect.objectContaining({
        code: 'E_SELECTOR_INVALID',
        message: `invalid label selector ${JSON.stringify(text)}: ${why}`,
        hints: [SELECTOR_HINT],
      }),
    );
  });

  it('reads --labels with spaces around keys and values, and refuses a pair with two "="', () => {
    expect(parseLabels(' env = dev ,region= eu-west')).toEqual({ env: 'dev', region: 'eu-west' });
    expect(parseLabels('  ')).toEqual({});
    for (const part of ['env=dev=prod', 'env=-x']) {
      expect(() => parseLabels(part)).toThrow(
        expect.objectContaining({
          code: 'E_LABELS_INVALID',
          message: `invalid label ${JSON.stringify(part)}: expected key=value`,
          hints: ['Labels are comma-separated key=value pairs, for example env=dev,region=eu-west.'],
        }),
      );
    }
  });
});
