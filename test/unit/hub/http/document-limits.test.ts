/**
 * The hub's document limits (issue #30): every limit is named in the
 * refusal with where it was passed, and checking a document of any depth
 * cannot itself overflow the stack.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkDocumentLimits,
  DocumentLimitError,
  MAX_DOCUMENT_DEPTH,
  type DocumentLimits,
} from '../../../../src/hub/http/document-limits.js';

/** `depth` arrays, one inside the other, built without recursion. */
function nested(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let level = 0; level < depth; level += 1) value = [value];
  return value;
}

function refusal(document: unknown, limits?: DocumentLimits): DocumentLimitError {
  try {
    checkDocumentLimits(document, 'the body', limits);
  } catch (error) {
    if (error instanceof DocumentLimitError) return error;
    throw error;
  }
  throw new Error('the document was taken');
}

const small: DocumentLimits = { maxDepth: 4, maxObjectKeys: 3, maxArrayItems: 3, maxStringLength: 8 };

describe('document limits', () => {
  it('takes a document exactly at the depth limit and refuses one level more, naming the limit and the place', () => {
    expect(() => checkDocumentLimits(nested(MAX_DOCUMENT_DEPTH), 'the body')).not.toThrow();
    const error = refusal({ spec: { resources: [nested(MAX_DOCUMENT_DEPTH)] } });
    expect(error).toMatchObject({ code: 'E_DOCUMENT_LIMIT', limit: 'depth' });
    expect(error.message).toMatch(
      /the body nests deeper than 128 levels \(the hub's depth limit\), at \$\.spec\.resources\[0\]/,
    );
  });

  it('checks a million levels without overflowing the stack', () => {
    expect(refusal(JSON.parse(`${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`)).limit).toBe('depth');
  });

  it('names the object-keys, array-items and string-length limits, keys included', () => {
    expect(refusal({ a: { b: 1, c: 2, d: 3, e: 4 } }, small)).toMatchObject({ limit: 'object-keys', path: '$.a' });
    expect(refusal({ a: [1, 2, 3, 4] }, small)).toMatchObject({ limit: 'array-items', path: '$.a' });
    expect(refusal({ 'a.b': ['123456789'] }, small)).toMatchObject({ limit: 'string-length', path: '$["a.b"][0]' });
    expect(refusal({ a: { '123456789': 1 } }, small)).toMatchObject({ limit: 'string-length', path: '$.a' });
  });

  it('takes every document within the limits, and a refusal is always one of the named limits', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        try {
          checkDocumentLimits(value, 'the body', small);
        } catch (error) {
          expect(error).toBeInstanceOf(DocumentLimitError);
          expect(['depth', 'object-keys', 'array-items', 'string-length']).toContain(
            (error as DocumentLimitError).limit,
          );
        }
        expect(() => checkDocumentLimits(value, 'the body')).not.toThrow();
      }),
      { numRuns: 300 },
    );
  });
});
