import { describe, expect, it } from 'vitest';
import { pythonLiteral } from '../../../../src/fleet/inventory/python-literal.js';

describe("pythonLiteral: INI values as Ansible's literal_eval reads them", () => {
  it('reads Python numbers, and keeps leading-zero integers as text (Python 3 has none)', () => {
    expect(pythonLiteral('2222')).toBe(2222);
    expect(pythonLiteral('02222')).toBe('02222');
    expect(pythonLiteral('0x10')).toBe(16);
    expect(pythonLiteral('0o17')).toBe(15);
    expect(pythonLiteral('1_000')).toBe(1000);
    expect(pythonLiteral('-5')).toBe(-5);
    expect(pythonLiteral('1e3')).toBe(1000);
    expect(pythonLiteral('0.5')).toBe(0.5);
  });
  it('reads booleans, None, quoted strings and containers', () => {
    expect(pythonLiteral('True')).toBe(true);
    expect(pythonLiteral('None')).toBe(null);
    expect(pythonLiteral("'2222'")).toBe('2222');
    expect(pythonLiteral('"a b"')).toBe('a b');
    expect(pythonLiteral("{'tier': 'store', 'n': 1}")).toEqual({ tier: 'store', n: 1 });
    expect(pythonLiteral('[1, (2, 3)]')).toEqual([1, [2, 3]]);
  });
  it('keeps anything else as the text written', () => {
    for (const text of ['yes', 'true', 'deploy', '10.0.0.1', 'a=b', '{{ x }}', "'open", '2:02', '0o9']) {
      expect(pythonLiteral(text)).toBe(text);
    }
  });
});
