/**
 * One cluster's copy of a rollout: the resources with `${…}` placeholders
 * filled from the cluster, the patches whose selector matches it applied,
 * edgeadm's ownership marks added, in the order a cluster can apply them
 * (CRDs, then namespaces, then the rest). A mistake in a customization is
 * an error for that cluster alone, found before anything is sent to it.
 * Pure: no I/O.
 *
 * Placeholders, in any string of any object:
 * - `${cluster.name}`: the cluster's name;
 * - `${label:KEY}`: the value of one of its labels;
 * - `${property:KEY}`: a property the operator set on it;
 * - `${label:KEY|fallback}` and `${property:KEY|fallback}`: with a fallback when it has none;
 * - `$${` writes a literal `${`.
 */
import { createHash } from 'node:crypto';
import { matchesSelector } from '../kube/label-selector.js';
import type { RolloutResource, RolloutSpec } from './spec.js';

/** The label every object of a rollout carries, with the rollout's name. */
export const ROLLOUT_LABEL = 'edgeadm.io/rollout';
/** The annotation that carries the copy's revision, which status reports quote back. */
export const ROLLOUT_REVISION_ANNOTATION = 'edgeadm.io/rollout-revision';

/** What customization reads of a cluster. */
export interface ClusterFacts {
  name: string;
  labels: Readonly<Record<string, string>>;
  properties: Readonly<Record<string, string>>;
}

/** One cluster's rendered copy. */
export interface RenderedCopy {
  /** `<rollout revision>-<hash of this copy>`: changes when anything this cluster receives changes. */
  revision: string;
  objects: RolloutResource[];
}

/** Why a copy could not be rendered for a cluster. */
export interface RenderFailure {
  /** Where: `spec.resources[2].spec.template.spec.containers[0].image`. */
  field: string;
  message: string;
}

/** The outcome for one cluster. */
export type RenderResult = { ok: true; copy: RenderedCopy } | { ok: false; failure: RenderFailure };

/** Application order of kinds; everything else comes after, cluster-scoped before namespaced. */
const KIND_ORDER = ['CustomResourceDefinition', 'Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding'];

class PlaceholderError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

function substitute(text: string, cluster: ClusterFacts, field: string): string {
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

function resolvePlaceholder(expression: string, cluster: ClusterFacts, field: string): string {
  if (expression === 'cluster.name') return cluster.name;
  const match = /^(label|property):([^|}]+)(?:\|(.*))?$/.exec(expression);
  if (!match) {
    throw new PlaceholderError(
      field,
      `unknown placeholder "\${${expression}}": use \${cluster.name}, \${label:KEY} or \${property:KEY}`,
    );
  }
  const [, source, key = '', fallback] = match;
  const values = source === 'label' ? cluster.labels : cluster.properties;
  const value = Object.hasOwn(values, key) ? values[key] : fallback;
  if (value === undefined) {
    throw new PlaceholderError(
      field,
      `cluster "${cluster.name}" has no ${source} "${key}" and the placeholder has no fallback`,
    );
  }
  return value;
}

function substituteAll(value: unknown, cluster: ClusterFacts, field: string): unknown {
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

/** RFC 7386 JSON merge patch: objects merge, `null` deletes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const base: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete base[key];
    else base[key] = mergePatch(base[key], value);
  }
  return base;
}

/** Canonical JSON (keys sorted) so that equal objects hash equally. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonical(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Orders objects so that each can be applied after what it depends on. */
export function applyOrderOf(objects: readonly RolloutResource[]): RolloutResource[] {
  const rank = (object: RolloutResource): number => {
    const index = KIND_ORDER.indexOf(object.kind);
    if (index !== -1) return index;
    return object.metadata.namespace === undefined ? KIND_ORDER.length : KIND_ORDER.length + 1;
  };
  return objects
    .map((object, index) => ({ object, index }))
    .sort((a, b) => rank(a.object) - rank(b.object) || a.index - b.index)
    .map(({ object }) => object);
}

/**
 * Renders the copy of `rollout` (at `revision`) for one cluster.
 * Never throws for a customization mistake: it is returned as a failure.
 */
export function renderCopy(rollout: RolloutSpec, revision: number, cluster: ClusterFacts): RenderResult {
  try {
    const objects = rollout.resources.map((resource, index) => {
      let object = substituteAll(resource, cluster, `spec.resources[${index}]`) as RolloutResource;
      rollout.customization.patches.forEach((patch, patchIndex) => {
        if (!matchesSelector(patch.selector, cluster.labels)) return;
        const { kind, name, namespace } = patch.target;
        if (kind !== undefined && kind !== object.kind) return;
        if (name !== undefined && name !== object.metadata.name) return;
        if (namespace !== undefined && namespace !== object.metadata.namespace) return;
        const field = `spec.customization.patches[${patchIndex}].patch`;
        object = mergePatch(object, substituteAll(patch.patch, cluster, field)) as RolloutResource;
        if (typeof object.metadata?.name !== 'string' || object.kind !== resource.kind) {
          throw new PlaceholderError(field, "a patch may not change an object's kind or remove its name");
        }
      });
      return object;
    });
    const ordered = applyOrderOf(objects);
    const copyHash = createHash('sha256').update(canonical(ordered)).digest('hex').slice(0, 12);
    const copyRevision = `${revision}-${copyHash}`;
    return {
      ok: true,
      copy: { revision: copyRevision, objects: ordered.map((object) => marked(object, rollout.name, copyRevision)) },
    };
  } catch (error) {
    if (error instanceof PlaceholderError)
      return { ok: false, failure: { field: error.field, message: error.message } };
    throw error;
  }
}

function marked(object: RolloutResource, rolloutName: string, revision: string): RolloutResource {
  const metadata = object.metadata;
  const labels = (metadata['labels'] ?? {}) as Record<string, string>;
  const annotations = (metadata['annotations'] ?? {}) as Record<string, string>;
  return {
    ...object,
    metadata: {
      ...metadata,
      labels: { ...labels, [ROLLOUT_LABEL]: rolloutName },
      annotations: { ...annotations, [ROLLOUT_REVISION_ANNOTATION]: revision },
    },
  };
}
