/**
 * The rooms of src/ import each other in one direction only. Every import in
 * src/ (static, `export … from`, and dynamic `import('…')`) is reduced to an
 * edge between two top-level folders (src/<folder>); a loop between folders
 * means two rooms that cannot be understood, tested or moved apart, so the
 * test names each loop and one import for each of its edges.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(__dirname, '../../../src');

/** Every relative module specifier a TypeScript source names. */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"\n]+)\1/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The room of a file: its top-level folder under src/, or the file itself at the top. */
function roomOf(file: string): string {
  return relative(SRC, file).split(sep)[0] as string;
}

/** Folder-level edges, each with one import that makes it (file → specifier). */
export function folderGraph(files: ReadonlyMap<string, string>): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const [file, text] of files) {
    const from = roomOf(file);
    for (const match of text.matchAll(SPECIFIER)) {
      const specifier = match[2] as string;
      const target = resolve(dirname(file), specifier);
      if (!target.startsWith(SRC + sep)) continue;
      const to = roomOf(target.replace(/\.js$/, '.ts'));
      if (to === from) continue;
      const edges = graph.get(from) ?? new Map<string, string>();
      if (!edges.has(to)) edges.set(to, `${relative(SRC, file)} imports '${specifier}'`);
      graph.set(from, edges);
    }
  }
  return graph;
}

/**
 * Edges between the rooms inside one folder (src/hub/api → src/hub/store):
 * an import between two files is reduced to an edge between the children of
 * their nearest common folder below src/ that hold them (a sub-folder, or a
 * file directly in that folder), named by their path under src/. The top
 * level is {@link folderGraph}'s; this graph holds every level below it.
 */
export function nestedFolderGraph(files: ReadonlyMap<string, string>): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const [file, text] of files) {
    const fromParts = relative(SRC, file).split(sep);
    for (const match of text.matchAll(SPECIFIER)) {
      const specifier = match[2] as string;
      const target = resolve(dirname(file), specifier);
      if (!target.startsWith(SRC + sep)) continue;
      const toParts = relative(SRC, target.replace(/\.js$/, '.ts')).split(sep);
      let common = 0;
      while (common < fromParts.length - 1 && common < toParts.length - 1 && fromParts[common] === toParts[common]) {
        common += 1;
      }
      // Edges between top-level rooms are folderGraph's.
      if (common === 0) continue;
      const from = fromParts.slice(0, common + 1).join('/');
      const to = toParts.slice(0, common + 1).join('/');
      if (from === to) continue;
      const edges = graph.get(from) ?? new Map<string, string>();
      if (!edges.has(to)) edges.set(to, `${relative(SRC, file)} imports '${specifier}'`);
      graph.set(from, edges);
    }
  }
  return graph;
}

/** Whether a loop joins at least one folder (files of one folder importing each other are no rooms' loop). */
function joinsAFolder(loop: Loop): boolean {
  return [...loop.path, ...loop.others].some((node) => !node.endsWith('.ts'));
}

/**
 * Every loop, one per strongly connected component (Tarjan): the rooms of one
 * concrete loop in order (first repeated last), then any other rooms of the
 * same component.
 */
export function folderLoops(graph: ReadonlyMap<string, ReadonlyMap<string, string>>): Loop[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node) as number);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) as number, index.get(next) as number));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) components.push(component);
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  // Within each component, one concrete loop from its first room back to itself.
  return components.map((component) => {
    const members = new Set(component);
    const start = [...component].sort()[0] as string;
    const path = [start];
    const seen = new Set([start]);
    const walk = (node: string): boolean => {
      for (const next of graph.get(node)?.keys() ?? []) {
        if (!members.has(next)) continue;
        if (next === start) return path.push(start) > 0;
        if (seen.has(next)) continue;
        seen.add(next);
        path.push(next);
        if (walk(next)) return true;
        path.pop();
      }
      return false;
    };
    walk(start);
    return { path, others: [...members].filter((room) => !path.includes(room)).sort() };
  });
}

/** One loop between rooms, and the rooms caught in the same knot besides it. */
interface Loop {
  path: string[];
  others: string[];
}

function describeLoop(graph: ReadonlyMap<string, ReadonlyMap<string, string>>, { path, others }: Loop): string {
  const edges = path.slice(1).map((to, i) => `  ${graph.get(path[i] as string)?.get(to)}`);
  const knot = others.length > 0 ? [`  (in the same knot: ${others.join(', ')})`] : [];
  return [`${path.join(' → ')}:`, ...edges, ...knot].join('\n');
}

describe('the folder graph of src/', () => {
  it('has no loop between folders', () => {
    const files = new Map(sourceFiles(SRC).map((file) => [file, readFileSync(file, 'utf8')] as const));
    const graph = folderGraph(files);
    const loops = folderLoops(graph).map((loop) => describeLoop(graph, loop));
    expect(loops, `folders that import each other:\n${loops.join('\n')}`).toEqual([]);
  });

  it('has no loop between the rooms inside a folder (src/hub/api, src/hub/store, …)', () => {
    const files = new Map(sourceFiles(SRC).map((file) => [file, readFileSync(file, 'utf8')] as const));
    const graph = nestedFolderGraph(files);
    const loops = folderLoops(graph)
      .filter(joinsAFolder)
      .map((loop) => describeLoop(graph, loop));
    expect(loops, `rooms that import each other:\n${loops.join('\n')}`).toEqual([]);
  });

  it('finds a loop between the rooms inside a folder, and none through a file of the folder above', () => {
    const files = new Map([
      [join(SRC, 'hub/api/one.ts'), "import { b } from '../store/two.js';\nimport { l } from '../limits.js';"],
      [join(SRC, 'hub/store/two.ts'), "import { c } from '../api/three.js';"],
      [join(SRC, 'hub/api/three.ts'), "import { one } from './one.js';"],
      [join(SRC, 'hub/limits.ts'), "import { x } from '../tunnel/x.js';"],
      [join(SRC, 'hub/store/etcd/four.ts'), "import { two } from '../two.js';"],
    ]);
    const graph = nestedFolderGraph(files);
    expect(folderLoops(graph).filter(joinsAFolder)).toEqual([
      { path: ['hub/api', 'hub/store', 'hub/api'], others: [] },
    ]);
    expect([...(graph.get('hub/api')?.keys() ?? [])]).toEqual(['hub/store', 'hub/limits.ts']);
    expect([...(graph.get('hub/store/etcd')?.keys() ?? [])]).toEqual(['hub/store/two.ts']);
    expect(graph.has('hub/limits.ts')).toBe(false);
  });

  it('finds a loop and names each of its imports', () => {
    const files = new Map([
      [join(SRC, 'a/one.ts'), "import { b } from '../b/two.js';"],
      [join(SRC, 'b/two.ts'), "export { c } from '../c/three.js';"],
      [join(SRC, 'c/three.ts'), "const a = await import('../a/one.js');"],
      [join(SRC, 'd/four.ts'), "import type { A } from '../a/one.js';"],
    ]);
    const graph = folderGraph(files);
    const loops = folderLoops(graph);
    expect(loops).toEqual([{ path: ['a', 'b', 'c', 'a'], others: [] }]);
    expect(describeLoop(graph, loops[0] as Loop)).toBe(
      [
        'a → b → c → a:',
        "  a/one.ts imports '../b/two.js'",
        "  b/two.ts imports '../c/three.js'",
        "  c/three.ts imports '../a/one.js'",
      ].join('\n'),
    );
  });

  it('names the other rooms of a knot of loops, and no loop in a graph without one', () => {
    const files = new Map([
      [join(SRC, 'a/one.ts'), "import { b } from '../b/two.js';\nimport { c } from '../c/three.js';"],
      [join(SRC, 'b/two.ts'), "import { a } from '../a/one.js';"],
      [join(SRC, 'c/three.ts'), "import { a } from '../a/one.js';"],
    ]);
    expect(folderLoops(folderGraph(files))).toEqual([{ path: ['a', 'b', 'a'], others: ['c'] }]);
    files.delete(join(SRC, 'b/two.ts'));
    files.set(join(SRC, 'c/three.ts'), "import { d } from '../d/four.js';");
    expect(folderLoops(folderGraph(files))).toEqual([]);
  });
});
