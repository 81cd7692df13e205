import { describe, expect, it } from 'vitest';
import { isKeptAnswer } from '../../../src/edge/forwarding.js';

describe('isKeptAnswer', () => {
  it('keeps only a cacheable read’s uncompressed 200 JSON answer', () => {
    const json = { 'content-type': 'application/json; charset=utf-8' };
    expect(isKeptAnswer(true, 200, json)).toBe(true);
    expect(isKeptAnswer(false, 200, json)).toBe(false);
    expect(isKeptAnswer(true, 404, json)).toBe(false);
    expect(isKeptAnswer(true, 200, { ...json, 'content-encoding': 'gzip' })).toBe(false);
    expect(isKeptAnswer(true, 200, { 'content-type': 'application/vnd.kubernetes.protobuf' })).toBe(false);
    expect(isKeptAnswer(true, 200, {})).toBe(false);
  });
});
