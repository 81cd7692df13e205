import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../src/errors.js';
import { parsePropertyAssignments } from '../../../src/hub-client/cluster-properties.js';

describe('KEY=VALUE properties', () => {
  it('splits at the first "=", so values may hold "=" or be empty', () => {
    expect(parsePropertyAssignments(['tag=1.4.3', 'query=a=b', 'empty='])).toEqual({
      tag: '1.4.3',
      query: 'a=b',
      empty: '',
    });
  });

  it('refuses no properties, a missing "=", a key a placeholder cannot name, and a key given twice', () => {
    for (const args of [[], ['tag'], ['=x'], ['a|b=x'], ['a}=x'], ['a=1', 'a=2']]) {
      expect(() => parsePropertyAssignments(args), JSON.stringify(args)).toThrow(ValidationError);
    }
  });

  it('round-trips any key it accepts and any value', () => {
    const key = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._/-]{0,20}$/);
    fc.assert(
      fc.property(fc.dictionary(key, fc.string({ maxLength: 50 })), (properties) => {
        const args = Object.entries(properties).map(([k, v]) => `${k}=${v}`);
        fc.pre(args.length > 0);
        expect(parsePropertyAssignments(args)).toEqual(properties);
      }),
    );
  });
});
