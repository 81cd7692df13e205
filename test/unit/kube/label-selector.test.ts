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
});
