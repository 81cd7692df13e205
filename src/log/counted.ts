/**
 * Counted nouns for messages people read: "1 file", "2 files". Kept apart
 * from rendering so that every command and progress line says it the same way.
 */

/** `count` and the noun in the number that fits: `counted(1, 'host')` is "1 host". */
export function counted(count: number, singular: string, plural = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : plural}`;
}
