import { describe, expect, it } from 'vitest';
import { parseByteSize } from '../../../src/edge/byte-size.js';

describe('parseByteSize', () => {
  it('reads bytes and Kubernetes suffixes', () => {
    expect(parseByteSize('1024', '--x')).toBe(1024);
    expect(parseByteSize('256Mi', '--x')).toBe(256 * 1024 * 1024);
    expect(parseByteSize('2G', '--x')).toBe(2e9);
  });

  it('refuses nonsense with the flag name', () => {
    expect(() => parseByteSize('0', '--cache-max-bytes')).toThrow(/--cache-max-bytes/);
    expect(() => parseByteSize('12MB', '--cache-max-bytes')).toThrow(/positive size/);
  });
});
