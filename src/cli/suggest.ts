/**
 * "Did you mean": the known commands closest to one that does not exist,
 * as kubectl and git suggest them. Pure: no I/O.
 */

/** How many edits a suggestion may be away, at most (more for long input). */
const MAX_DISTANCE = 3;

/**
 * The command ids (space-separated, as typed) closest to `typed`, best first:
 * the ones fewest edits away (a whole word missing costs half an edit more).
 * `typed` may be oclif's colon form (`tokens:list`) or the typed one.
 */
export function suggestCommands(typed: string, commandIds: readonly string[], limit = 3): string[] {
  const input = typed.replaceAll(':', ' ').trim().toLowerCase();
  if (input === '') return [];
  const budget = Math.min(MAX_DISTANCE, Math.max(1, Math.floor(input.length / 3)));
  const scored = commandIds
    .map((id) => id.replaceAll(':', ' '))
    .map((id) => ({ id, distance: Math.min(editDistance(input, id), prefixDistance(input, id) + 0.5) }))
    .filter(({ distance }) => distance <= budget)
    .sort((a, b) => a.distance - b.distance || a.id.localeCompare(b.id));
  // Only the closest: `tokens` suggests the topic `token`, not each of its commands too.
  const best = scored[0]?.distance;
  return scored
    .filter(({ distance }) => distance === best)
    .slice(0, limit)
    .map(({ id }) => id);
}

/** The distance to `id` cut to as many words as `input` has (`tokens` against `token list`). */
function prefixDistance(input: string, id: string): number {
  const words = input.split(' ').length;
  const head = id.split(' ').slice(0, words).join(' ');
  return head === id ? Number.POSITIVE_INFINITY : editDistance(input, head);
}

/** Levenshtein distance: insertions, deletions and substitutions. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}
