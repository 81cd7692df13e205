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
import { matchesSelector } from '../kube/label-selector.js';
import { copyKeyOf, hasPlaceholders } from './copy-key.js';
import { PlaceholderError, substituteAll, type ClusterFacts } from './placeholders.js';
import type { RolloutResource, RolloutSpec } from './spec.js';

/** The label every object of a rollout carries, with the rollout's name. */
export const ROLLOUT_LABEL = 'edgeadm.io/rollout';
/** The annotation that carries the copy's revision, which status reports quote back. */
export const ROLLOUT_REVISION_ANNOTATION = 'edgeadm.io/rollout-revision';

export type { ClusterFacts } from './placeholders.js';

/** One cluster's rendered copy. */
export interface RenderedCopy {
  /**
   * `<rollout revision>-<copy key>` (copy-key.ts): changes when anything
   * this cluster receives changes, and is the same for clusters whose
   * copies are the same.
   */
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

/** A cluster's copy revision, or why its copy cannot be rendered, without keeping the copy. */
export type CopyRevisionResult = { ok: true; revision: string } | { ok: false; failure: RenderFailure };

/** Application order of kinds; everything else comes after, cluster-scoped before namespaced. */
const KIND_ORDER = ['CustomResourceDefinition', 'Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding'];

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

/** The objects of one cluster's copy, unmarked, in apply order. */
function renderObjects(
  rollout: RolloutSpec,
  cluster: ClusterFacts,
): { ok: true; objects: RolloutResource[] } | { ok: false; failure: RenderFailure } {
  try {
    const objects = rollout.resources.map((resource, index) => {
      // Shared, not copied, when there is nothing to fill: nothing below changes an object in place.
      let object = hasPlaceholders(rollout, index)
        ? (substituteAll(resource, cluster, `spec.resources[${index}]`) as RolloutResource)
        : resource;
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
    return { ok: true, objects: applyOrderOf(objects) };
  } catch (error) {
    if (error instanceof PlaceholderError)
      return { ok: false, failure: { field: error.field, message: error.message } };
    throw error;
  }
}

/**
 * The revision of `rollout`'s copy (at `revision`) for one cluster, or why
 * it cannot be rendered, at the cost of a few lookups: the copy is
 * rendered here only when its key says it might fail (copy-key.ts).
 */
export function copyRevisionOf(rollout: RolloutSpec, revision: number, cluster: ClusterFacts): CopyRevisionResult {
  const key = copyKeyOf(rollout, cluster);
  if (key.needsCheck) {
    const rendered = renderObjects(rollout, cluster);
    if (!rendered.ok) return rendered;
  }
  return { ok: true, revision: `${revision}-${key.hash}` };
}

/**
 * Renders the copy of `rollout` (at `revision`) for one cluster.
 * Never throws for a customization mistake: it is returned as a failure.
 */
export function renderCopy(rollout: RolloutSpec, revision: number, cluster: ClusterFacts): RenderResult {
  const rendered = renderObjects(rollout, cluster);
  if (!rendered.ok) return rendered;
  const copyRevision = `${revision}-${copyKeyOf(rollout, cluster).hash}`;
  return {
    ok: true,
    copy: { revision: copyRevision, objects: rendered.objects.map((o) => marked(o, rollout.name, copyRevision)) },
  };
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
