/**
 * The labels a hub token lets a cluster register with (issue #30): a token
 * created with `hub token create --labels env=dev,site=*` registers only
 * clusters whose labels are exactly those keys, each with the given value
 * or, for `*`, any value. Without a limit, whoever holds any token could give
 * their cluster labels that put it in any hub user's scope, and so receive
 * that scope's rollouts, Secrets included.
 *
 * Pure: no I/O.
 */
import { ValidationError } from '../../errors.js';
import { isLabelKey, isLabelValue } from '../../kube/names.js';

/** The value that lets a label key take any value. */
export const ANY_LABEL_VALUE = '*';

/** A token's label limit: each key a registration must have, with its value or {@link ANY_LABEL_VALUE}. */
export type TokenLabelLimit = Readonly<Record<string, string>>;

/** Why `limit` is not a label limit, or undefined. */
export function tokenLabelLimitProblem(limit: Readonly<Record<string, unknown>>): string | undefined {
  for (const [key, value] of Object.entries(limit)) {
    if (!isLabelKey(key)) return `label key ${JSON.stringify(key)} is not a Kubernetes label key`;
    if (typeof value !== 'string' || (value !== ANY_LABEL_VALUE && !isLabelValue(value))) {
      return `label ${JSON.stringify(key)}: the value must be a label value or ${ANY_LABEL_VALUE} (any value)`;
    }
  }
  return undefined;
}

/**
 * Parses `env=dev,site=*` (the `--labels` of `hub token create`).
 *
 * @throws {ValidationError} `E_LABELS_INVALID`.
 */
export function parseTokenLabelLimit(text: string): TokenLabelLimit {
  const limit: Record<string, string> = {};
  for (const part of text.split(',')) {
    const [key = '', value, ...rest] = part.split('=').map((piece) => piece.trim());
    if (value === undefined || rest.length > 0 || tokenLabelLimitProblem({ [key]: value }) !== undefined) {
      throw new ValidationError(`invalid label limit ${JSON.stringify(part)}: expected key=value or key=*`, {
        code: 'E_LABELS_INVALID',
        hints: ['For example --labels env=dev,site=*: clusters must carry env=dev and a site label, and nothing else.'],
      });
    }
    limit[key] = value;
  }
  return limit;
}

/** Why a registration with `labels` is outside `limit`, or undefined when it is within. */
export function labelsOutsideLimit(
  labels: Readonly<Record<string, string>>,
  limit: TokenLabelLimit,
): string | undefined {
  for (const key of Object.keys(labels)) {
    if (!(key in limit)) return `label ${JSON.stringify(key)} is not one this token allows`;
  }
  for (const [key, allowed] of Object.entries(limit)) {
    const value = labels[key];
    if (value === undefined) return `label ${JSON.stringify(key)} is required by this token`;
    if (allowed !== ANY_LABEL_VALUE && value !== allowed) {
      return `label ${key}=${JSON.stringify(value)} is not allowed (this token allows ${key}=${allowed})`;
    }
  }
  return undefined;
}

/** The limit as `--labels` spells it. */
export function formatTokenLabelLimit(limit: TokenLabelLimit): string {
  return Object.entries(limit)
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
}
