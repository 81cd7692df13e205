import { randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isEdgeadmError } from '../../../src/errors.js';
import { Redactor } from '../../../src/log/redact.js';
import {
  BOOTSTRAP_TOKEN_CHARSET,
  DEFAULT_BOOTSTRAP_TOKEN_GROUP,
  DEFAULT_BOOTSTRAP_TOKEN_TTL_MS,
  bootstrapTokenSecret,
  formatBootstrapToken,
  generateBootstrapToken,
  isBootstrapToken,
  parseBootstrapToken,
  parseBootstrapTokenId,
  readBootstrapTokenSecret,
} from '../../../src/trust/bootstrap-token.js';

/** How many random cases each property runs. */
const PROPERTY_RUNS = 2000;

const TOKEN = { id: 'abcdef', secret: '0123456789abcdef' };

function decode(data: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

function parseError(text: string): { code: string; exitCode: number; message: string; hints: string[] } {
  try {
    parseBootstrapToken(text);
  } catch (error) {
    if (isEdgeadmError(error)) return error;
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(text)} to be rejected`);
}

describe('generateBootstrapToken', () => {
  it('makes <6>.<16> tokens of a-z0-9 that parse back to the same id and secret', () => {
    for (let run = 0; run < PROPERTY_RUNS; run++) {
      const token = generateBootstrapToken();
      const text = formatBootstrapToken(token);
      expect(text).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
      expect(parseBootstrapToken(text)).toEqual(token);
    }
  });

  it('uses every character of the charset (no character is unreachable)', () => {
    const seen = new Set<string>();
    for (let run = 0; run < PROPERTY_RUNS; run++) {
      for (const char of formatBootstrapToken(generateBootstrapToken()).replace('.', '')) seen.add(char);
    }
    expect([...seen].sort().join('')).toBe([...BOOTSTRAP_TOKEN_CHARSET].sort().join(''));
  });

  it('does not repeat tokens', () => {
    const tokens = new Set(Array.from({ length: PROPERTY_RUNS }, () => formatBootstrapToken(generateBootstrapToken())));
    expect(tokens.size).toBe(PROPERTY_RUNS);
  });
});

describe('parseBootstrapToken', () => {
  it('accepts the kubeadm example token', () => {
    expect(parseBootstrapToken('abcdef.0123456789abcdef')).toEqual(TOKEN);
  });

  it.each([
    ['', 'it is empty'],
    ['abcdef0123456789abcdef', 'it has 0 dots instead of one'],
    ['abc.def.0123456789abcdef', 'it has 2 dots instead of one'],
    ['abcde.0123456789abcdef', 'the id has 5 characters instead of 6'],
    ['abcdef.0123456789abcde', 'the secret has 15 characters instead of 16'],
    ['ABCDEF.0123456789abcdef', 'the id has characters other than a-z and 0-9'],
    ['abcdef.0123456789ABCDEF', 'the secret has characters other than a-z and 0-9'],
    [' abcdef.0123456789abcdef', 'the id has 7 characters instead of 6; the id has characters other than a-z and 0-9'],
    [
      'abcdef.0123456789abcdef\n',
      'the secret has 17 characters instead of 16; the secret has characters other than a-z and 0-9',
    ],
  ])('rejects %j, saying %s', (text, why) => {
    const error = parseError(text);
    expect(error.code).toBe('E_TOKEN_INVALID');
    expect(error.exitCode).toBe(3);
    expect(error.message).toBe(`the bootstrap token is not of the form "[a-z0-9]{6}.[a-z0-9]{16}": ${why}`);
  });

  it('says what a token looks like in words that survive redaction', () => {
    const error = parseError('BADTOKEN');
    const redactor = new Redactor();
    for (const line of [error.message, ...error.hints]) expect(redactor.redact(line)).toBe(line);
  });

  it('never repeats the rejected value in the message (a mistyped token is still a secret)', () => {
    const error = parseError('abcdef.0123456789abcdeX');
    expect(error.message).not.toContain('0123456789abcde');
  });

  /** Random single-edit mutations of a valid token; every one must be rejected. */
  const mutations: Array<[string, (token: string) => string]> = [
    ['drop a character', (t) => dropAt(t, randomInt(t.length))],
    ['insert a valid character', (t) => insertAt(t, randomInt(t.length + 1), randomCharset())],
    ['replace a character with an invalid one', (t) => replaceAt(t, randomInt(t.length), randomInvalid())],
    ['replace the dot', (t) => t.replace('.', randomFrom([...BOOTSTRAP_TOKEN_CHARSET, '-', '_', ':', ' ']))],
    ['move the dot', (t) => moveDot(t)],
    ['uppercase a letter', (t) => uppercaseOneLetter(t)],
  ];

  it.each(mutations)('rejects random tokens mutated to %s', (_name, mutate) => {
    for (let run = 0; run < PROPERTY_RUNS; run++) {
      const original = formatBootstrapToken(generateBootstrapToken());
      const mutated = mutate(original);
      if (mutated === original) continue; // e.g. no letter to uppercase
      expect(isBootstrapToken(mutated), mutated).toBe(false);
      expect(parseError(mutated).code).toBe('E_TOKEN_INVALID');
    }
  });
});

describe('parseBootstrapTokenId', () => {
  it('accepts a 6-character id and rejects others', () => {
    expect(parseBootstrapTokenId('abcdef')).toBe('abcdef');
    expect(() => parseBootstrapTokenId('abcdefg')).toThrow(/not of the form "\[a-z0-9\]\{6\}"/);
    expect(() => parseBootstrapTokenId('ABCDEF')).toThrow(/not of the form/);
  });
});

describe('bootstrapTokenSecret', () => {
  const now = new Date('2024-03-31T11:54:17.123Z');

  it('has exactly the layout kubeadm writes (defaults: 24h TTL, both usages, the default group)', () => {
    const secret = bootstrapTokenSecret({ token: TOKEN, description: 'edge site 42', now });
    expect(secret).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'bootstrap-token-abcdef', namespace: 'kube-system' },
      type: 'bootstrap.kubernetes.io/token',
      data: {
        'token-id': 'YWJjZGVm',
        'token-secret': 'MDEyMzQ1Njc4OWFiY2RlZg==',
        description: 'ZWRnZSBzaXRlIDQy',
        expiration: 'MjAyNC0wNC0wMVQxMTo1NDoxN1o=',
        'usage-bootstrap-signing': 'dHJ1ZQ==',
        'usage-bootstrap-authentication': 'dHJ1ZQ==',
        'auth-extra-groups': 'c3lzdGVtOmJvb3RzdHJhcHBlcnM6a3ViZWFkbTpkZWZhdWx0LW5vZGUtdG9rZW4=',
      },
    });
    expect(decode(secret.data)).toEqual({
      'token-id': 'abcdef',
      'token-secret': '0123456789abcdef',
      description: 'edge site 42',
      expiration: '2024-04-01T11:54:17Z',
      'usage-bootstrap-signing': 'true',
      'usage-bootstrap-authentication': 'true',
      'auth-extra-groups': 'system:bootstrappers:kubeadm:default-node-token',
    });
  });

  it('defaults to a 24h TTL and the kubeadm node-token group', () => {
    expect(DEFAULT_BOOTSTRAP_TOKEN_TTL_MS).toBe(24 * 3600 * 1000);
    expect(DEFAULT_BOOTSTRAP_TOKEN_GROUP).toBe('system:bootstrappers:kubeadm:default-node-token');
  });

  it('writes the expiration in UTC with whole seconds, RFC 3339', () => {
    const data = decode(bootstrapTokenSecret({ token: TOKEN, ttlMs: 90 * 60_000, now }).data);
    expect(data.expiration).toBe('2024-03-31T13:24:17Z');
    expect(data.expiration).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  it('leaves out description when empty, and expiration when the TTL is 0 (never expires)', () => {
    const data = decode(bootstrapTokenSecret({ token: TOKEN, ttlMs: 0, now }).data);
    expect(Object.keys(data).sort()).toEqual([
      'auth-extra-groups',
      'token-id',
      'token-secret',
      'usage-bootstrap-authentication',
      'usage-bootstrap-signing',
    ]);
  });

  it('lets an absolute expiry win over the TTL', () => {
    const expires = new Date('2030-01-02T03:04:05.999Z');
    expect(decode(bootstrapTokenSecret({ token: TOKEN, ttlMs: 1000, expires, now }).data).expiration).toBe(
      '2030-01-02T03:04:05Z',
    );
  });

  it('writes chosen usages and comma-joined groups', () => {
    const data = decode(
      bootstrapTokenSecret({
        token: TOKEN,
        usages: ['authentication'],
        groups: ['system:bootstrappers:edgeadm:hub', 'system:bootstrappers:site-42'],
        now,
      }).data,
    );
    expect(data['usage-bootstrap-authentication']).toBe('true');
    expect(data['usage-bootstrap-signing']).toBeUndefined();
    expect(data['auth-extra-groups']).toBe('system:bootstrappers:edgeadm:hub,system:bootstrappers:site-42');
  });

  it('refuses groups outside system:bootstrappers:, unknown usages, negative TTLs and bad tokens', () => {
    expect(() => bootstrapTokenSecret({ token: TOKEN, groups: ['system:masters'] })).toThrow(
      expect.objectContaining({ code: 'E_TOKEN_GROUP_INVALID' }),
    );
    expect(() => bootstrapTokenSecret({ token: TOKEN, groups: ['system:bootstrappers:'] })).toThrow(
      expect.objectContaining({ code: 'E_TOKEN_GROUP_INVALID' }),
    );
    expect(() => bootstrapTokenSecret({ token: TOKEN, usages: ['signing', 'impersonation' as 'signing'] })).toThrow(
      expect.objectContaining({ code: 'E_TOKEN_USAGE_INVALID' }),
    );
    expect(() => bootstrapTokenSecret({ token: TOKEN, ttlMs: -1 })).toThrow(
      expect.objectContaining({ code: 'E_TOKEN_TTL_INVALID' }),
    );
    expect(() => bootstrapTokenSecret({ token: { id: 'ABCDEF', secret: TOKEN.secret } })).toThrow(
      expect.objectContaining({ code: 'E_TOKEN_INVALID' }),
    );
  });
});

describe('readBootstrapTokenSecret', () => {
  it('reads back what bootstrapTokenSecret wrote', () => {
    const secret = bootstrapTokenSecret({
      token: TOKEN,
      description: 'd',
      now: new Date('2024-01-01T00:00:00Z'),
    });
    expect(readBootstrapTokenSecret(secret)).toEqual({
      token: TOKEN,
      description: 'd',
      expires: new Date('2024-01-02T00:00:00Z'),
      usages: ['authentication', 'signing'],
      groups: [DEFAULT_BOOTSTRAP_TOKEN_GROUP],
    });
  });

  it('refuses a Secret whose name does not match its token id, or whose expiration does not parse', () => {
    const secret = bootstrapTokenSecret({ token: TOKEN });
    expect(() => readBootstrapTokenSecret({ ...secret, metadata: { name: 'bootstrap-token-zzzzzz' } })).toThrow(
      /is not "bootstrap-token-abcdef"/,
    );
    const badExpiry = { ...secret, data: { ...secret.data, expiration: Buffer.from('tomorrow').toString('base64') } };
    expect(() => readBootstrapTokenSecret(badExpiry)).toThrow(/expiration "tomorrow" is not an RFC 3339 time/);
  });

  const b64 = (text: string): string => Buffer.from(text).toString('base64');

  it.each([
    ['of another type', { type: 'Opaque' }, 'its type is not bootstrap.kubernetes.io/token'],
    ['with a token id that is not one', { id: 'ABCDEF' }, 'token-id or token-secret is malformed'],
    ['with a malformed secret', { secret: '0123' }, 'token-id or token-secret is malformed'],
    ['without data', { data: 'none' }, 'its name is not "bootstrap-token-"'],
  ])('refuses a Secret %s, naming it', (_what, change, why) => {
    const secret = bootstrapTokenSecret({ token: TOKEN });
    const data: Record<string, string> = { ...secret.data };
    if ('id' in change) data['token-id'] = b64(change.id);
    if ('secret' in change) data['token-secret'] = b64(change.secret);
    const changed = {
      ...secret,
      ...('type' in change ? { type: change.type } : {}),
      ...('id' in change ? { metadata: { name: `bootstrap-token-${change.id}` } } : {}),
      ...('data' in change ? { data: undefined } : { data }),
    };
    expect(() => readBootstrapTokenSecret(changed)).toThrow(
      expect.objectContaining({
        code: 'E_TOKEN_SECRET_INVALID',
        message: `bootstrap token Secret ${JSON.stringify(changed.metadata?.name ?? '')} is invalid: ${why}`,
      }),
    );
  });

  it('reads no usage from keys that merely end like one, no empty group, and an expiry with fractions or an offset', () => {
    const secret = bootstrapTokenSecret({ token: TOKEN, ttlMs: 0 });
    const data = {
      ...secret.data,
      'usage-bootstrap-authentication': b64('true'),
      'x-usage-bootstrap-signing': b64('true'),
      'usage-bootstrap-signing': b64('false'),
      'auth-extra-groups': b64('system:bootstrappers:a,,system:bootstrappers:b,'),
      expiration: b64('2030-01-01T01:00:00.5+01:00'),
      description: b64(''),
    };
    expect(readBootstrapTokenSecret({ ...secret, data })).toStrictEqual({
      token: TOKEN,
      usages: ['authentication'],
      groups: ['system:bootstrappers:a', 'system:bootstrappers:b'],
      expires: new Date('2030-01-01T00:00:00.500Z'),
    });
    const noGroups = { ...secret.data, 'auth-extra-groups': b64('') };
    expect(readBootstrapTokenSecret({ ...secret, data: noGroups }).groups).toEqual([]);
    const withoutExpiry = readBootstrapTokenSecret(bootstrapTokenSecret({ token: TOKEN, ttlMs: 0 }));
    expect(withoutExpiry).not.toHaveProperty('expires');
    expect(withoutExpiry).not.toHaveProperty('description');
  });

  it('refuses an expiration that only contains an RFC 3339 time', () => {
    const secret = bootstrapTokenSecret({ token: TOKEN });
    for (const text of ['in 2030-01-01T00:00:00Z or so', 'Jan 1 2030', '2030-01-01']) {
      const data = { ...secret.data, expiration: b64(text) };
      expect(() => readBootstrapTokenSecret({ ...secret, data }), text).toThrow(/is not an RFC 3339 time/);
    }
  });

  it('refuses a Secret without metadata with a typed error, and reads one without groups', () => {
    const secret = bootstrapTokenSecret({ token: TOKEN, groups: [] });
    expect(() => readBootstrapTokenSecret({ ...secret, metadata: undefined as never })).toThrow(
      expect.objectContaining({
        code: 'E_TOKEN_SECRET_INVALID',
        message: expect.stringContaining('Secret "" is invalid'),
      }),
    );
    expect(readBootstrapTokenSecret(secret).groups).toEqual([]);
  });

  it('counts a usage only when its value is exactly "true"', () => {
    const secret = bootstrapTokenSecret({ token: TOKEN });
    const data = { ...secret.data, 'usage-bootstrap-signing': Buffer.from('yes').toString('base64') };
    expect(readBootstrapTokenSecret({ ...secret, data }).usages).toEqual(['authentication']);
  });
});

function randomFrom<T>(items: readonly T[]): T {
  return items[randomInt(items.length)] as T;
}
function randomCharset(): string {
  return randomFrom([...BOOTSTRAP_TOKEN_CHARSET]);
}
function randomInvalid(): string {
  return randomFrom([...'ABCXYZ-_:./+ =\t\n', 'é', '\u0000']);
}
function dropAt(text: string, index: number): string {
  return text.slice(0, index) + text.slice(index + 1);
}
function insertAt(text: string, index: number, char: string): string {
  return text.slice(0, index) + char + text.slice(index);
}
function replaceAt(text: string, index: number, char: string): string {
  return text.slice(0, index) + char + text.slice(index + 1);
}
function moveDot(text: string): string {
  const bare = text.replace('.', '');
  let index = randomInt(bare.length + 1);
  if (index === 6) index = randomFrom([5, 7]);
  return insertAt(bare, index, '.');
}
function uppercaseOneLetter(text: string): string {
  const letters = [...text].map((c, i) => (/[a-z]/.test(c) ? i : -1)).filter((i) => i >= 0);
  if (letters.length === 0) return text;
  const index = randomFrom(letters);
  return replaceAt(text, index, (text[index] as string).toUpperCase());
}

describe('bootstrap token errors as the user reads them', () => {
  it('says what a token looks like and where to get one', () => {
    expect(() => parseBootstrapToken('abc')).toThrow(
      expect.objectContaining({
        hints: [
          'A bootstrap token is 6 characters, a dot, then 16 characters, all lowercase letters and digits (the id, then the secret).',
          'Print the join command on the control plane, or make a new token with "edgeadm token generate".',
        ],
      }),
    );
    expect(() => parseBootstrapTokenId('ABCDEF')).toThrow(expect.objectContaining({ code: 'E_TOKEN_ID_INVALID' }));
  });

  it('names the bad usage, group or TTL', () => {
    expect(() => bootstrapTokenSecret({ token: TOKEN, usages: ['signing', 'x' as never] })).toThrow(
      expect.objectContaining({
        code: 'E_TOKEN_USAGE_INVALID',
        message: 'invalid bootstrap token usage "x": valid usages are signing, authentication',
      }),
    );
    expect(() => bootstrapTokenSecret({ token: TOKEN, groups: ['system:masters'] })).toThrow(
      expect.objectContaining({
        code: 'E_TOKEN_GROUP_INVALID',
        message: expect.stringMatching(/^invalid bootstrap token group "system:masters": it must match \^/),
        hints: ['Extra groups must start with "system:bootstrappers:".'],
      }),
    );
    expect(() => bootstrapTokenSecret({ token: TOKEN, ttlMs: -1 })).toThrow(
      expect.objectContaining({
        code: 'E_TOKEN_TTL_INVALID',
        message: 'invalid bootstrap token TTL: it must be 0 (never expires) or positive',
      }),
    );
  });

  it('writes no auth-extra-groups key for a token without extra groups', () => {
    expect(bootstrapTokenSecret({ token: TOKEN, groups: [] }).data).not.toHaveProperty('auth-extra-groups');
  });
});
