/**
 * Which clusters a rollout reaches, in which wave, and whether a scoped hub
 * user may own it. Pure: no I/O.
 *
 * Placement is resolved again whenever the hub's clusters change, so a
 * cluster registered later that matches joins the rollout.
 */
import { matchesSelector, parseLabelSelector, type LabelSelector, type SelectorTerm } from '../kube/label-selector.js';
import { resolveClusterCount, type Placement, type Strategy } from './spec.js';

/** What placement reads of a cluster. */
export interface PlaceableCluster {
  name: string;
  labels: Readonly<Record<string, string>>;
}

/** The clusters a placement takes, sorted by name; with a scope, only those within it. */
export function placedClusters(
  placement: Placement,
  clusters: readonly PlaceableCluster[],
  scope: LabelSelector = { terms: [] },
): string[] {
  const named = placement.clusters === undefined ? undefined : new Set(placement.clusters);
  return clusters
    .filter(
      (cluster) =>
        (named === undefined || named.has(cluster.name)) &&
        (placement.selector === undefined || matchesSelector(placement.selector, cluster.labels)) &&
        matchesSelector(scope, cluster.labels),
    )
    .map((cluster) => cluster.name)
    .sort();
}

/**
 * Splits placed clusters (sorted) into waves: each wave's size is
 * cumulative (wave 2 of `[1, "10%", "100%"]` ends at 10 % of the clusters),
 * each wave takes at least one cluster, and the last wave takes everything
 * that remains. Empty waves are left out. This is the plan; the progress
 * controller records a cluster's wave when that wave starts, so clusters
 * registered later never move one that has started.
 */
export function wavesOf(strategy: Strategy, clusters: readonly string[]): string[][] {
  const waves: string[][] = [];
  let taken = 0;
  strategy.waves.forEach((size, index) => {
    const isLast = index === strategy.waves.length - 1;
    const end = isLast ? clusters.length : Math.max(taken + 1, resolveClusterCount(size, clusters.length));
    const wave = clusters.slice(taken, end);
    if (wave.length > 0) waves.push(wave);
    taken += wave.length;
  });
  return waves;
}

/** True when every label set that satisfies `term` also satisfies `required`. */
function termImplies(term: SelectorTerm, required: SelectorTerm): boolean {
  if (term.key !== required.key) return false;
  switch (required.operator) {
    case 'equals':
      return term.operator === 'equals' && term.value === required.value;
    case 'exists':
      return term.operator === 'equals' || term.operator === 'exists';
    case 'not-equals':
      return (term.operator === 'equals' && term.value !== required.value) || term.operator === 'not-exists';
    case 'not-exists':
      return term.operator === 'not-exists';
  }
}

/**
 * True when every cluster a selector matches is also matched by `scope`,
 * whatever labels clusters get later: each term of the scope is implied by
 * some term of the selector. (Conservative: a selector can imply a scope in
 * ways this does not see; such a rollout is refused, never let through.)
 */
export function selectorImplies(selector: LabelSelector, scope: LabelSelector): boolean {
  return scope.terms.every((required) => selector.terms.some((term) => termImplies(term, required)));
}

/** Why a scoped user may not own a placement, or undefined when they may. */
export function placementOutsideScope(
  placement: Placement,
  scopeText: string,
  clusters: readonly PlaceableCluster[],
): string | undefined {
  const scope = parseLabelSelector(scopeText);
  if (scope.terms.length === 0) return undefined;
  if (placement.selector !== undefined && selectorImplies(placement.selector, scope)) return undefined;
  if (placement.clusters !== undefined) {
    const byName = new Map(clusters.map((cluster) => [cluster.name, cluster]));
    const outside = placement.clusters.filter((name) => {
      const cluster = byName.get(name);
      return cluster === undefined || !matchesSelector(scope, cluster.labels);
    });
    if (outside.length === 0) return undefined;
    return `the clusters ${outside.map((name) => `"${name}"`).join(', ')} are not within your clusters (${scopeText})`;
  }
  return `the placement's clusterSelector "${placement.selectorText ?? ''}" can reach clusters outside yours (${scopeText}); add your selector's terms to it`;
}
