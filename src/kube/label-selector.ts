/**
 * Label selectors for clusters, in the equality-based form Kubernetes
 * uses: `env=dev,region!=eu,gpu` (every term must hold). The hub uses them
 * to list clusters and to bound what a user may reach.
 */
import { ValidationError } from '../errors.js';
import { isLabelKey, isLabelValue } from './names.js';

/** One term of a selector. */
export type SelectorTerm =
  | { key: string; operator: 'equals' | 'not-equals'; value: string }
  | { key: string; operator: 'exists' | 'not-exists' };

/** A parsed selector: all terms must match. An empty selector matches everything. */
export interface LabelSelector {
  terms: SelectorTerm[];
}

function invalid(text: string, why: string): ValidationError {
  return new ValidationError(`invalid label selector ${JSON.stringify(text)}: ${why}`, {
    code: 'E_SELECTOR_INVALID',
    hints: ['A selector is comma-separated terms: key=value, key!=value, key or !key.'],
  });
}

/**
 * Parses a selector.
 *
 * @throws {ValidationError} `E_SELECTOR_INVALID`.
 */
export function parseLabelSelector(text: string): LabelSelector {
  const terms: SelectorTerm[] = [];
  for (const raw of text.split(',')) {
    const part = raw.trim();
    if (part === '') {
      if (text.trim() === '') continue;
      throw invalid(text, 'it has an empty term');
    }
    const match = /^([^!=]+)(!=|==|=)(.*)$/.exec(part);
    if (match) {
      const key = (match[1] as string).trim();
      const value = (match[3] as string).trim();
      if (!isLabelKey(key)) throw invalid(text, `${JSON.stringify(key)} is not a label key`);
      if (!isLabelValue(value)) throw invalid(text, `${JSON.stringify(value)} is not a label value`);
      terms.push({ key, operator: match[2] === '!=' ? 'not-equals' : 'equals', value });
      continue;
    }
    const isNegated = part.startsWith('!');
    const key = isNegated ? part.slice(1).trim() : part;
    if (!isLabelKey(key)) throw invalid(text, `${JSON.stringify(key)} is not a label key`);
    terms.push({ key, operator: isNegated ? 'not-exists' : 'exists' });
  }
  return { terms };
}

/** True when `labels` satisfy every term of `selector`. */
export function matchesSelector(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  return selector.terms.every((term) => {
    const has = Object.hasOwn(labels, term.key);
    switch (term.operator) {
      case 'equals':
        return has && labels[term.key] === term.value;
      case 'not-equals':
        return !has || labels[term.key] !== term.value;
      case 'exists':
        return has;
      case 'not-exists':
        return !has;
    }
  });
}

/**
 * Parses `k=v,k2=v2` into a label map (for `--labels`).
 *
 * @throws {ValidationError} `E_LABELS_INVALID`.
 */
export function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  if (text.trim() === '') return labels;
  for (const part of text.split(',')) {
    const [key = '', value, ...rest] = part.split('=');
    if (value === undefined || rest.length > 0 || !isLabelKey(key.trim()) || !isLabelValue(value.trim())) {
      throw new ValidationError(`invalid label ${JSON.stringify(part)}: expected key=value`, {
        code: 'E_LABELS_INVALID',
        hints: ['Labels are comma-separated key=value pairs, for example env=dev,region=eu-west.'],
      });
    }
    labels[key.trim()] = value.trim();
  }
  return labels;
}
