import { describe, expect, it } from 'vitest';
import { OutputCapture } from '../../../src/hosts/output-capture.js';

describe('OutputCapture', () => {
  it('keeps the last bytes up to its limit', () => {
    const capture = new OutputCapture(10);
    capture.push('hello ');
    capture.push(Buffer.from('world, again'));
    expect(capture.text()).toBe('rld, again');
    expect(capture.truncated).toBe(true);
    const small = new OutputCapture(10);
    small.push('ok');
    expect([small.text(), small.truncated]).toEqual(['ok', false]);
  });
});
