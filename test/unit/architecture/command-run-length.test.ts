/**
 * Thin commands (STYLE.md: parse, call one function, render): every
 * command's `run()` body is at most {@link MAX_RUN_BODY_LINES} lines. What a
 * longer one does belongs in a request parser, a workflow, or the shared
 * runner of its family (src/cli/fleet-command.ts). Read with the TypeScript
 * parser, so a method's end is its real closing brace.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = resolve(__dirname, '../../../src');
const COMMANDS = join(SRC, 'commands');
/** The most lines a command's `run()` body may have (between its braces). */
const MAX_RUN_BODY_LINES = 40;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The body length (lines between the braces) of each class's `run()` method in `text`. */
export function runBodyLengths(file: string, text: string): { where: string; lines: number }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: { where: string; lines: number }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isMethodDeclaration(node) && node.name.getText(source) === 'run' && node.body !== undefined) {
      const open = source.getLineAndCharacterOfPosition(node.body.getStart(source)).line;
      const close = source.getLineAndCharacterOfPosition(node.body.getEnd()).line;
      const className = ts.isClassLike(node.parent) ? (node.parent.name?.getText(source) ?? 'default') : '?';
      found.push({ where: `${className}.run (line ${open + 1})`, lines: Math.max(0, close - open - 1) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("the commands' run()", () => {
  it(`is at most ${MAX_RUN_BODY_LINES} lines in every command`, () => {
    const tooLong = sourceFiles(COMMANDS).flatMap((file) =>
      runBodyLengths(file, readFileSync(file, 'utf8'))
        .filter(({ lines }) => lines > MAX_RUN_BODY_LINES)
        .map(({ where, lines }) => `${relative(SRC, file)}: ${where} has ${lines} lines`),
    );
    expect(tooLong, `run() bodies over ${MAX_RUN_BODY_LINES} lines:\n${tooLong.join('\n')}`).toEqual([]);
  });

  it('measures a run() body between its braces', () => {
    const text = [
      'export default class Probe {',
      '  async run(): Promise<void> {',
      '    const a = 1;',
      '    if (a) {',
      '      return;',
      '    }',
      '  }',
      '  other(): void {}',
      '}',
    ].join('\n');
    expect(runBodyLengths('probe.ts', text)).toEqual([{ where: 'Probe.run (line 2)', lines: 4 }]);
  });
});
