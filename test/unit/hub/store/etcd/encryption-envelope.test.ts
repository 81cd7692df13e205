/**
 * The encryption envelope of the hub's secrets in etcd, attacked with
 * generated values: whatever is stored under a key (tampered, truncated,
 * extended, sealed with another key, in another version, copied from under
 * another etcd key, or not an envelope at all) is either opened to exactly
 * what was sealed there, or refused with the typed error, never opened to
 * other bytes and never thrown as anything else. And every text sealed
 * opens to itself.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EdgeadmError } from '../../../../../src/errors.js';
import {
  encryptionKeysFrom,
  ENVELOPE_PREFIX,
  type EncryptionKeys,
} from '../../../../../src/hub/store/etcd/encryption.js';

const WRONG = 'E_HUB_ENCRYPTION_KEY_WRONG';

/** What opening `value` under `etcdKey` does: the text, or the typed error's code (anything else fails the test). */
function openOutcome(keys: EncryptionKeys, value: unknown, etcdKey: string): { text: string } | { code: string } {
  try {
    return { text: keys.open(value, etcdKey) };
  } catch (error) {
    if (!(error instanceof EdgeadmError))
      throw new Error(`open threw an untyped error: ${String(error)}`, { cause: error });
    return { code: error.code };
  }
}

/** Any JavaScript string: tokens, PEM, base64, any Unicode, and lone surrogates (no UTF-8 holds them). */
const anyText = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.base64String(),
  fc.constantFrom('', '\uD800', 'a\uDFFFb', '\uDBFF\uDFFF', '\uDFFF\uDBFF'),
);
const isWellFormed = (text: string): boolean => !/\p{Cs}/u.test(text);
/** A text the hub can seal: well-formed Unicode. */
const plaintext = anyText.filter(isWellFormed);
const etcdKey = fc.oneof(
  fc.constantFrom('/edgeadm/hub/tokens/abc', '/edgeadm/hub/identity/ca', '/edgeadm/hub/identity/admin'),
  fc.string({ minLength: 1 }),
);
const rawKey = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes));

describe('hub encryption envelope (generated values)', () => {
  it('opens every sealed text to itself, under its etcd key, with any key of the file; refuses to seal what would not', () => {
    fc.assert(
      fc.property(rawKey, rawKey, anyText, etcdKey, (first, second, text, key) => {
        const keys = encryptionKeysFrom([first, second]);
        const rotated = encryptionKeysFrom([second, first]);
        if (isWellFormed(text)) {
          expect(openOutcome(keys, keys.seal(text, key), key)).toEqual({ text });
          expect(openOutcome(keys, rotated.seal(text, key), key)).toEqual({ text });
        } else {
          // A lone surrogate has no UTF-8 form: it would open as U+FFFD, other text. Refused when sealed.
          expect(() => keys.seal(text, key)).toThrow(
            expect.objectContaining({ code: 'E_HUB_ENCRYPTION_TEXT_INVALID' }),
          );
        }
      }),
      { numRuns: 300 },
    );
  });

  it('refuses a sealed value with any character changed, removed or added, as the typed error', () => {
    const keys = encryptionKeysFrom([randomBytes(32)]);
    const edit = fc.oneof(
      fc.record({
        kind: fc.constant('replace' as const),
        at: fc.nat(),
        by: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
      }),
      fc.record({ kind: fc.constant('remove' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 8 }) }),
      fc.record({
        kind: fc.constant('insert' as const),
        at: fc.nat(),
        text: fc.string({ minLength: 1, maxLength: 4 }),
      }),
    );
    fc.assert(
      fc.property(plaintext, etcdKey, edit, (text, key, change) => {
        const sealed = keys.seal(text, key);
        const at = change.at % (sealed.length + 1);
        let tampered: string;
        if (change.kind === 'replace') {
          const index = Math.min(at, sealed.length - 1);
          tampered = sealed.slice(0, index) + change.by + sealed.slice(index + 1);
        } else if (change.kind === 'remove') tampered = sealed.slice(0, at) + sealed.slice(at + change.count);
        else tampered = sealed.slice(0, at) + change.text + sealed.slice(at);
        fc.pre(tampered !== sealed);
        expect(openOutcome(keys, tampered, key)).toEqual({ code: WRONG });
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses a sealed value truncated at any point, or with its bytes flipped, as the typed error', () => {
    const keys = encryptionKeysFrom([randomBytes(32)]);
    fc.assert(
      fc.property(plaintext, etcdKey, fc.nat(), fc.integer({ min: 1, max: 255 }), (text, key, at, mask) => {
        const sealed = keys.seal(text, key);
        expect(openOutcome(keys, sealed.slice(0, at % sealed.length), key)).toEqual({ code: WRONG });
        const head = sealed.slice(0, sealed.lastIndexOf(':') + 1);
        const body = Buffer.from(sealed.slice(head.length), 'base64');
        body[at % body.length]! ^= mask;
        expect(openOutcome(keys, `${head}${body.toString('base64')}`, key)).toEqual({ code: WRONG });
      }),
      { numRuns: 500 },
    );
  });

  it('refuses a value sealed with another key, under another etcd key, or named for another version', () => {
    fc.assert(
      fc.property(
        rawKey,
        rawKey,
        plaintext,
        etcdKey,
        etcdKey,
        fc.constantFrom('v0', 'v2', 'V1', 'v1 ', 'v10'),
        (mine, theirs, text, key, otherKey, version) => {
          fc.pre(!mine.equals(theirs));
          const keys = encryptionKeysFrom([mine]);
          const other = encryptionKeysFrom([theirs]);
          expect(openOutcome(keys, other.seal(text, key), key)).toEqual({ code: WRONG });
          // Their value relabelled with my key's id: my key does not authenticate it.
          const relabelled = other.seal(text, key).replace(`:${other.ids[0]}:`, `:${keys.ids[0]}:`);
          expect(openOutcome(keys, relabelled, key)).toEqual({ code: WRONG });
          const sealed = keys.seal(text, key);
          if (otherKey !== key) expect(openOutcome(keys, sealed, otherKey)).toEqual({ code: WRONG });
          const versioned = sealed.replace(/:v1:/, `:${version}:`);
          expect(openOutcome(keys, versioned, key)).toEqual({ code: WRONG });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuses, as the typed error, anything stored that is not an envelope of its own: any text, any JSON value', () => {
    const keys = encryptionKeysFrom([randomBytes(32)]);
    const stored = fc.oneof(
      fc.string(),
      fc.string().map((rest) => `${ENVELOPE_PREFIX}${rest}`),
      fc.string().map((rest) => `${ENVELOPE_PREFIX}${keys.ids[0]}:${rest}`),
      fc.base64String().map((rest) => `${ENVELOPE_PREFIX}${keys.ids[0]}:${rest}`),
      fc.jsonValue(),
      fc.constantFrom(undefined, null, 42, {}, [], { toString: () => ENVELOPE_PREFIX }),
    );
    fc.assert(
      fc.property(stored, etcdKey, (value, key) => {
        expect(openOutcome(keys, value, key)).toEqual({ code: WRONG });
      }),
      { numRuns: 1000 },
    );
  });
});
