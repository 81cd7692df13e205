/**
 * Bootstrap tokens: `<id>.<secret>`, six and sixteen characters of `a-z0-9`.
 *
 * Owns generation, parsing and the `bootstrap-token-<id>` Secret in the form
 * the API server's bootstrap authenticator and the controller manager's
 * signer read, byte for byte the same as kubeadm writes it, so a token made
 * by either tool works with the other.
 */
import { randomBytes } from 'node:crypto';
import { ValidationError } from '../errors.js';

/** Length of the public token id. */
export const BOOTSTRAP_TOKEN_ID_LENGTH = 6;
/** Length of the secret part. */
export const BOOTSTRAP_TOKEN_SECRET_LENGTH = 16;
/** The characters a token is made of. */
export const BOOTSTRAP_TOKEN_CHARSET = '0123456789abcdefghijklmnopqrstuvwxyz';
/** A whole token, as the API server matches it. */
export const BOOTSTRAP_TOKEN_PATTERN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
/** A token id alone. */
export const BOOTSTRAP_TOKEN_ID_PATTERN = /^[a-z0-9]{6}$/;

/** Namespace of the token Secrets. */
export const BOOTSTRAP_TOKEN_SECRET_NAMESPACE = 'kube-system';
/** Name prefix of the token Secrets: `bootstrap-token-<id>`. */
export const BOOTSTRAP_TOKEN_SECRET_PREFIX = 'bootstrap-token-';
/** The Secret type the bootstrap authenticator looks for. */
export const BOOTSTRAP_TOKEN_SECRET_TYPE = 'bootstrap.kubernetes.io/token';
/** How long a token lives unless told otherwise: 24h, as kubeadm. */
export const DEFAULT_BOOTSTRAP_TOKEN_TTL_MS = 24 * 60 * 60 * 1000;
/** The extra group kubeadm gives its node-join tokens; its RBAC bindings name it. */
export const DEFAULT_BOOTSTRAP_TOKEN_GROUP = 'system:bootstrappers:kubeadm:default-node-token';
/** What a token may be used for: signing cluster-info, and authenticating to the API server. */
export const BOOTSTRAP_TOKEN_USAGES = ['signing', 'authentication'] as const;
/** Extra groups must be in the bootstrappers namespace (the authenticator refuses others). */
export const BOOTSTRAP_GROUP_PATTERN = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;

/**
 * Random bytes at or above this are thrown away when drawing characters, so
 * that `byte % 36` is uniform (252 is the largest multiple of 36 under 256).
 */
const UNBIASED_BYTE_LIMIT = 252;

/** One usage of a bootstrap token. */
export type BootstrapTokenUsage = (typeof BOOTSTRAP_TOKEN_USAGES)[number];

/** A bootstrap token. `secret` is a credential: never log it. */
export interface BootstrapToken {
  id: string;
  secret: string;
}

/** Draws `length` uniformly random characters from {@link BOOTSTRAP_TOKEN_CHARSET}. */
function randomTokenString(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte >= UNBIASED_BYTE_LIMIT) continue;
      out += BOOTSTRAP_TOKEN_CHARSET[byte % BOOTSTRAP_TOKEN_CHARSET.length];
      if (out.length === length) break;
    }
  }
  return out;
}

/** Makes a new token from the operating system's cryptographic random source. */
export function generateBootstrapToken(): BootstrapToken {
  return {
    id: randomTokenString(BOOTSTRAP_TOKEN_ID_LENGTH),
    secret: randomTokenString(BOOTSTRAP_TOKEN_SECRET_LENGTH),
  };
}

/** The `<id>.<secret>` form, as `--token` takes it. */
export function formatBootstrapToken(token: BootstrapToken): string {
  return `${token.id}.${token.secret}`;
}

/** True when `text` is a well-formed token. */
export function isBootstrapToken(text: string): boolean {
  return BOOTSTRAP_TOKEN_PATTERN.test(text);
}

/**
 * Parses `<id>.<secret>`.
 *
 * The message says what is wrong without repeating the value: a mistyped
 * token is still mostly a secret.
 *
 * @throws {ValidationError} `E_TOKEN_INVALID`.
 */
export function parseBootstrapToken(text: string): BootstrapToken {
  const match = BOOTSTRAP_TOKEN_PATTERN.exec(text);
  if (match) return { id: match[1] as string, secret: match[2] as string };
  throw new ValidationError(`the bootstrap token is not of the form "[a-z0-9]{6}.[a-z0-9]{16}": ${whatIsWrong(text)}`, {
    code: 'E_TOKEN_INVALID',
    hints: [
      'A bootstrap token is 6 characters, a dot, then 16 characters, all lowercase letters and digits (the id, then the secret).',
      'Print the join command on the control plane, or make a new token with "edgeadm token generate".',
    ],
  });
}

/** Describes why `text` is not a token, without echoing its characters. */
function whatIsWrong(text: string): string {
  if (text.length === 0) return 'it is empty';
  const parts = text.split('.');
  if (parts.length !== 2) return `it has ${parts.length - 1} dots instead of one`;
  const [id = '', secret = ''] = parts;
  const problems: string[] = [];
  if (id.length !== BOOTSTRAP_TOKEN_ID_LENGTH) {
    problems.push(`the id has ${id.length} characters instead of ${BOOTSTRAP_TOKEN_ID_LENGTH}`);
  }
  if (!/^[a-z0-9]*$/.test(id)) problems.push('the id has characters other than a-z and 0-9');
  if (secret.length !== BOOTSTRAP_TOKEN_SECRET_LENGTH) {
    problems.push(`the secret has ${secret.length} characters instead of ${BOOTSTRAP_TOKEN_SECRET_LENGTH}`);
  }
  if (!/^[a-z0-9]*$/.test(secret)) problems.push('the secret has characters other than a-z and 0-9');
  return problems.join('; ');
}

/**
 * Asserts that a token object holds a well-formed token (a caller may have
 * built one by hand) and returns it as it is.
 *
 * @throws {ValidationError} `E_TOKEN_INVALID`, as {@link parseBootstrapToken}.
 */
export function assertBootstrapToken(token: BootstrapToken): BootstrapToken {
  if (!BOOTSTRAP_TOKEN_PATTERN.test(formatBootstrapToken(token))) parseBootstrapToken(formatBootstrapToken(token));
  return token;
}

/**
 * Parses a token id alone (for `token delete <id>`).
 *
 * @throws {ValidationError} `E_TOKEN_ID_INVALID`.
 */
export function parseBootstrapTokenId(text: string): string {
  if (BOOTSTRAP_TOKEN_ID_PATTERN.test(text)) return text;
  throw new ValidationError(
    `the bootstrap token id ${JSON.stringify(text)} is not of the form "[a-z0-9]{6}" (6 lowercase letters and digits)`,
    { code: 'E_TOKEN_ID_INVALID' },
  );
}

/** The name of the Secret that holds the token with this id. */
export function bootstrapTokenSecretName(id: string): string {
  return `${BOOTSTRAP_TOKEN_SECRET_PREFIX}${id}`;
}

/** What a token Secret holds besides the token. */
export interface BootstrapTokenSecretOptions {
  token: BootstrapToken;
  /**
   * How long the token lives from `now`, in milliseconds. Defaults to
   * {@link DEFAULT_BOOTSTRAP_TOKEN_TTL_MS}; `0` means it never expires (no
   * `expiration` key), as kubeadm's `--ttl 0`.
   */
  ttlMs?: number;
  /** An absolute expiry; wins over `ttlMs` (kubeadm gives `expires` priority too). */
  expires?: Date;
  /** Free text shown by `token list`. Left out of the Secret when empty, as kubeadm does. */
  description?: string;
  /** Defaults to both usages. */
  usages?: readonly BootstrapTokenUsage[];
  /** Extra groups; defaults to {@link DEFAULT_BOOTSTRAP_TOKEN_GROUP}. */
  groups?: readonly string[];
  /** The clock, for tests. */
  now?: Date;
}

/** A `bootstrap.kubernetes.io/token` Secret, ready to create. `data` values are base64. */
export interface BootstrapTokenSecret {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: { name: string; namespace: string };
  type: typeof BOOTSTRAP_TOKEN_SECRET_TYPE;
  data: Record<string, string>;
}

/**
 * Builds the Secret that makes a token valid on a cluster.
 *
 * Keys, as kubeadm writes them: `token-id`, `token-secret`, `description`
 * (only when not empty), `expiration` (RFC 3339 in UTC, seconds precision),
 * `usage-bootstrap-<usage>: "true"` and `auth-extra-groups` (comma-joined).
 * Values are base64 in `data`, as the API returns them; the API server
 * stores `data` as is, so reading it back gives the same object.
 *
 * @throws {ValidationError} for a bad token, TTL, usage or group.
 */
export function bootstrapTokenSecret(options: BootstrapTokenSecretOptions): BootstrapTokenSecret {
  const token = assertBootstrapToken(options.token);
  const usages = options.usages ?? BOOTSTRAP_TOKEN_USAGES;
  const groups = options.groups ?? [DEFAULT_BOOTSTRAP_TOKEN_GROUP];
  for (const usage of usages) {
    if (!(BOOTSTRAP_TOKEN_USAGES as readonly string[]).includes(usage)) {
      throw new ValidationError(
        `invalid bootstrap token usage ${JSON.stringify(usage)}: valid usages are ${BOOTSTRAP_TOKEN_USAGES.join(', ')}`,
        { code: 'E_TOKEN_USAGE_INVALID' },
      );
    }
  }
  for (const group of groups) {
    if (!BOOTSTRAP_GROUP_PATTERN.test(group)) {
      throw new ValidationError(
        `invalid bootstrap token group ${JSON.stringify(group)}: it must match ${BOOTSTRAP_GROUP_PATTERN.source}`,
        { code: 'E_TOKEN_GROUP_INVALID', hints: ['Extra groups must start with "system:bootstrappers:".'] },
      );
    }
  }
  const ttlMs = options.ttlMs ?? DEFAULT_BOOTSTRAP_TOKEN_TTL_MS;
  if (!Number.isFinite(ttlMs) || ttlMs < 0) {
    throw new ValidationError(`invalid bootstrap token TTL: it must be 0 (never expires) or positive`, {
      code: 'E_TOKEN_TTL_INVALID',
    });
  }

  const values: Record<string, string> = { 'token-id': token.id, 'token-secret': token.secret };
  if (options.description) values.description = options.description;
  const now = options.now ?? new Date();
  const expires = options.expires ?? (ttlMs > 0 ? new Date(now.getTime() + ttlMs) : undefined);
  if (expires) values.expiration = formatRfc3339Utc(expires);
  for (const usage of usages) values[`usage-bootstrap-${usage}`] = 'true';
  if (groups.length > 0) values['auth-extra-groups'] = groups.join(',');

  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: bootstrapTokenSecretName(token.id), namespace: BOOTSTRAP_TOKEN_SECRET_NAMESPACE },
    type: BOOTSTRAP_TOKEN_SECRET_TYPE,
    data: Object.fromEntries(
      Object.entries(values).map(([key, value]) => [key, Buffer.from(value, 'utf8').toString('base64')]),
    ),
  };
}

/** What a token Secret says, decoded. */
export interface BootstrapTokenInfo {
  token: BootstrapToken;
  description?: string;
  /** Undefined when the token never expires. */
  expires?: Date;
  usages: string[];
  groups: string[];
}

/** The subset of a Secret that {@link readBootstrapTokenSecret} reads. */
export interface SecretLike {
  metadata?: { name?: string };
  type?: string;
  data?: Record<string, string> | undefined;
}

/**
 * Reads a token Secret back (for `token list`), checking it the way the
 * API server does: right type, a name that matches `token-id`, a well-formed
 * token, and a parseable expiry.
 *
 * @throws {ValidationError} `E_TOKEN_SECRET_INVALID`.
 */
export function readBootstrapTokenSecret(secret: SecretLike): BootstrapTokenInfo {
  const name = secret.metadata?.name ?? '';
  const invalid = (why: string): ValidationError =>
    new ValidationError(`bootstrap token Secret ${JSON.stringify(name)} is invalid: ${why}`, {
      code: 'E_TOKEN_SECRET_INVALID',
    });
  if (secret.type !== BOOTSTRAP_TOKEN_SECRET_TYPE) throw invalid(`its type is not ${BOOTSTRAP_TOKEN_SECRET_TYPE}`);
  const field = (key: string): string | undefined => {
    const value = secret.data?.[key];
    return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
  };
  const id = field('token-id') ?? '';
  const tokenSecret = field('token-secret') ?? '';
  if (name !== bootstrapTokenSecretName(id)) {
    throw invalid(`its name is not ${JSON.stringify(bootstrapTokenSecretName(id))}`);
  }
  if (!isBootstrapToken(`${id}.${tokenSecret}`)) throw invalid('token-id or token-secret is malformed');
  const info: BootstrapTokenInfo = {
    token: { id, secret: tokenSecret },
    usages: Object.keys(secret.data ?? {})
      .filter((key) => key.startsWith('usage-bootstrap-') && field(key) === 'true')
      .map((key) => key.slice('usage-bootstrap-'.length))
      .sort(),
    groups: (field('auth-extra-groups') ?? '').split(',').filter((group) => group !== ''),
  };
  const description = field('description');
  if (description) info.description = description;
  const expiration = field('expiration');
  if (expiration !== undefined) {
    const expires = parseRfc3339(expiration);
    if (!expires) throw invalid(`its expiration ${JSON.stringify(expiration)} is not an RFC 3339 time`);
    info.expires = expires;
  }
  return info;
}

/** RFC 3339 in UTC with whole seconds (`2024-04-01T11:54:17Z`), as Go's `time.RFC3339` formats a UTC time. */
export function formatRfc3339Utc(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;

function parseRfc3339(text: string): Date | undefined {
  if (!RFC3339.test(text)) return undefined;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? undefined : date;
}
