import { describe, expect, it } from 'vitest';
import { counted } from '../../../src/log/counted.js';

describe('counted', () => {
  it('says one in the singular and any other number in the plural', () => {
    expect(counted(1, 'file')).toBe('1 file');
    expect(counted(0, 'file')).toBe('0 files');
    expect(counted(2, 'control plane')).toBe('2 control planes');
    expect(counted(3, 'entry', 'entries')).toBe('3 entries');
  });
});
