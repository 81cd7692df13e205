/**
 * Label and field selectors for list and watch: `labelSelector` with
 * equality (`a=b`, `a==b`, `a!=b`), set (`a in (x,y)`, `a notin (x)`) and
 * existence (`a`, `!a`) terms; `fieldSelector` with `=`, `==` and `!=` on a
 * dotted path into the object (`metadata.name`, `metadata.namespace`,
 * `spec.nodeName`, `type`, …).
 */
import { badRequest } from './status.js';

type LabelTerm =
  | { op: 'eq' | 'neq'; key: string; value: string }
  | { op: 'in' | 'notin'; key: string; values: string[] }
  | { op: 'exists' | 'notexists'; key: string };

/** A compiled label selector; the empty selector matches everything. */
export interface LabelSelector {
  matches(labels: Record<string, string> | undefined): boolean;
}

/** Splits on commas that are not inside parentheses. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      terms.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  terms.push(current);
  return terms.map((t) => t.trim()).filter((t) => t.length > 0);
}

function parseLabelTerm(term: string): LabelTerm {
  const setMatch = /^([^\s!=()]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
  if (setMatch) {
    const values = (setMatch[3] ?? '')
      .split(',')
      .map((v) => v.trim())
      .filter((v) => v.length > 0);
    return { op: setMatch[2] === 'in' ? 'in' : 'notin', key: setMatch[1] ?? '', values };
  }
  const inequality = /^([^\s!=]+)\s*!=\s*(\S*)$/.exec(term);
  if (inequality) return { op: 'neq', key: inequality[1] ?? '', value: inequality[2] ?? '' };
  const equality = /^([^\s!=]+)\s*==?\s*(\S*)$/.exec(term);
  if (equality) return { op: 'eq', key: equality[1] ?? '', value: equality[2] ?? '' };
  const absent = /^!\s*([^\s!=()]+)$/.exec(term);
  if (absent) return { op: 'notexists', key: absent[1] ?? '' };
  if (/^[^\s!=()]+$/.test(term)) return { op: 'exists', key: term };
  throw badRequest(`unable to parse requirement: found '${term}', expected: in, notin, =, ==, !=, gt, lt`);
}

/** Parses a `labelSelector` query value. */
export function parseLabelSelector(text: string | null): LabelSelector {
  const terms = text ? splitTerms(text).map(parseLabelTerm) : [];
  return {
    matches(labels) {
      const l = labels ?? {};
      return terms.every((term) => {
        const has = Object.prototype.hasOwnProperty.call(l, term.key);
        const value = l[term.key];
        switch (term.op) {
          case 'eq':
            return has && value === term.value;
          case 'neq':
            return !has || value !== term.value;
          case 'in':
            return has && term.values.includes(value ?? '');
          case 'notin':
            return !has || !term.values.includes(value ?? '');
          case 'exists':
            return has;
          case 'notexists':
            return !has;
        }
        return false;
      });
    },
  };
}

/** A compiled field selector over arbitrary objects. */
export interface FieldSelector {
  matches(object: Record<string, unknown>): boolean;
  /** The value required for `metadata.name`, when the selector pins one (used to authorize single-object watches). */
  pinnedName: string | undefined;
}

function fieldValue(object: Record<string, unknown>, path: string): string {
  let current: unknown = object;
  for (const segment of path.split('.')) {
    if (current === null || typeof current !== 'object') return '';
    current = (current as Record<string, unknown>)[segment];
  }
  if (current === undefined || current === null) return '';
  return typeof current === 'string' ? current : JSON.stringify(current);
}

/** Parses a `fieldSelector` query value. */
export function parseFieldSelector(text: string | null): FieldSelector {
  const terms = (text ? splitTerms(text) : []).map((term) => {
    const match = /^([A-Za-z0-9_.-]+)\s*(!=|==|=)\s*(.*)$/.exec(term);
    if (!match) throw badRequest(`invalid field selector: '${term}'`);
    return { path: match[1] ?? '', negate: match[2] === '!=', value: (match[3] ?? '').trim() };
  });
  const pinned = terms.find((t) => t.path === 'metadata.name' && !t.negate);
  return {
    pinnedName: pinned?.value,
    matches(object) {
      return terms.every((t) => (fieldValue(object, t.path) === t.value) !== t.negate);
    },
  };
}
