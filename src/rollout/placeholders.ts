/**
 * The `${…}` placeholders of a rollout's documents, read and filled from
 * one cluster (render.ts fills them; copy-key.ts reads which a copy
 * depends on). Pure: no I/O.
 *
 * - `${cluster.name}`: the cluster's name;
 * - `${label:KEY}`: the value of one of its labels;
 * - `${property:KEY}`: a property the operator set on it;
 * - `${label:KEY|fallback}` and `${property:KEY|fallback}`: with a fallback when it has none;
 * - `$${` writes a literal `${`.
 */

/** What customization reads of a cluster. */
export interface ClusterFacts {
  name: string;
  labels: Readonly<Record<string, string>>;
  properties: Readonly<Record<string, string>>;
}

/** A placeholder that cannot be filled for a cluster, and where it is. */
export class PlaceholderError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** The expressions of a text's placeholders in order, or undefined when one has no closing `}`. */
export function expressionsOf(text: string): string[] | undefined {
  const expressions: string[] = [];
  let at = 0;
  for (;;) {
    const start = text.indexOf('${', at);
    if (start === -1) return expressions;
    if (start > 0 && text[start - 1] === '$') {
      at = start + 2;
      continue;
    }
    const end = text.indexOf('}', start);
    if (end === -1) return undefined;
    expressions.push(text.slice(start + 2, end));
    at = end + 1;
  }
}

/** An expression's value for a cluster: a string, `missing` (no value and no fallback), or `unknown` syntax. */
export type Lookup = { value: string } | { missing: { source: string; key: string } } | 'unknown';

/** Looks an expression up on a cluster. */
export function lookUp(expression: string, cluster: ClusterFacts): Lookup {
  if (expression === 'cluster.name') return { value: cluster.name };
  const match = /^(label|property):([^|}]+)(?:\|(.*))?$/.exec(expression);
  if (!match) return 'unknown';
  const [, source = '', key = '', fallback] = match;
  const values = source === 'label' ? cluster.labels : cluster.properties;
  const value = Object.hasOwn(values, key) ? values[key] : fallback;
  return value === undefined ? { missing: { source, key } } : { value };
}

function resolvePlaceholder(expression: string, cluster: ClusterFacts, field: string): string {
  const found = lookUp(expression, cluster);
  if (found === 'unknown') {
    throw new PlaceholderError(
      field,
      `unknown placeholder "\${${expression}}": use \${cluster.name}, \${label:KEY} or \${property:KEY}`,
    );
  }
  if ('missing' in found) {
    const { source, key } = found.missing;
    throw new PlaceholderError(
      field,
      `cluster "${cluster.name}" has no ${source} "${key}" and the placeholder has no fallback`,
    );
  }
  return found.value;
}

/** A text with its placeholders filled. */
export function substitute(text: string, cluster: ClusterFacts, field: string): string {
  if (!text.includes('${')) return text;
  let out = '';
  let at = 0;
  while (at < text.length) {
    const start = text.indexOf('${', at);
    if (start === -1) {
      out += text.slice(at);
      break;
    }
    if (start > 0 && text[start - 1] === '$') {
      // `$${` is a literal `${`: drop the escaping `$` and go on after the brace.
      out += text.slice(at, start - 1) + '${';
      at = start + 2;
      continue;
    }
    const end = text.indexOf('}', start);
    if (end === -1) throw new PlaceholderError(field, `"${text.slice(start)}" has no closing "}"`);
    out += text.slice(at, start) + resolvePlaceholder(text.slice(start + 2, end), cluster, field);
    at = end + 1;
  }
  return out;
}

/** A value with every string (and object key) in it filled. */
export function substituteAll(value: unknown, cluster: ClusterFacts, field: string): unknown {
  if (typeof value === 'string') return substitute(value, cluster, field);
  if (Array.isArray(value)) return value.map((item, index) => substituteAll(item, cluster, `${field}[${index}]`));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [
        substitute(key, cluster, `${field}.${key}`),
        substituteAll(item, cluster, `${field}.${key}`),
      ]),
    );
  }
  return value;
}
