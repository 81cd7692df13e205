/**
 * Where each key of a YAML document is written, so that validation errors can
 * name the line. The parser gives values without positions; inventories are
 * block-style YAML, so an indentation scan of the text recovers the line of
 * every mapping key by its path (`all.children.stores.hosts.s1`).
 */

/** Key path (dot-joined) to its 1-based line. */
export type LineMap = ReadonlyMap<string, number>;

const KEY_LINE = /^(\s*)(?:-\s+)?(?:"([^"]*)"|'([^']*)'|([^\s#'"][^:#]*?))\s*:(?:\s|$)/;

/** Scans block-style YAML text and maps every key path to its line. */
export function buildLineMap(text: string): LineMap {
  const map = new Map<string, number>();
  const stack: { indent: number; key: string }[] = [];
  text.split(/\r?\n/).forEach((line, index) => {
    if (/^\s*(#|$)/.test(line) || /^(---|\.\.\.)\s*$/.test(line)) return;
    const match = KEY_LINE.exec(line);
    if (!match) return;
    const dash = /^(\s*)-\s+/.exec(line);
    // A key after "- " sits at the column after the dash.
    const indent = dash ? dash[0].length : match[1]!.length;
    const key = (match[2] ?? match[3] ?? match[4] ?? '').trim();
    while (stack.length > 0 && stack[stack.length - 1]!.indent >= indent) stack.pop();
    stack.push({ indent, key });
    const path = stack.map((entry) => entry.key).join('.');
    if (!map.has(path)) map.set(path, index + 1);
  });
  return map;
}

/** The line of `path`, or of its nearest written ancestor. */
export function lineOf(map: LineMap, path: string[]): number | undefined {
  for (let length = path.length; length > 0; length--) {
    const line = map.get(path.slice(0, length).join('.'));
    if (line !== undefined) return line;
  }
  return undefined;
}
