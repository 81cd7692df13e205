/**
 * The size limits of eslint.config.js (a file of src/ at most 400 lines, a
 * function at most 80; blank lines and comments not counted) hold everywhere
 * but in the files eslint.size-allowlist.json lists, each held to its size.
 * The list may only shrink: each number is the file's size today (so it is
 * lowered as the file shrinks, and the entry removed once under the limit),
 * and no entry is added (the counts below only go down).
 */
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';

const REPO = resolve(__dirname, '../../..');
/** How many entries each list had when it was written; lower them as entries go, never raise them. */
const MAX_LISTED_FILES = 5;
const MAX_LISTED_FUNCTION_FILES = 29;

interface SizeAllowlist {
  maxLines: Record<string, number>;
  maxLinesPerFunction: Record<string, number>;
}

/** eslint.size-allowlist.json: the limits, and the files over them. */
function readAllowlist(): SizeAllowlist & { limits: { fileLines: number; functionLines: number } } {
  return JSON.parse(readFileSync(resolve(REPO, 'eslint.size-allowlist.json'), 'utf8')) as SizeAllowlist & {
    limits: { fileLines: number; functionLines: number };
  };
}

/** The files of src/ over the limits now, with their size (a file's lines; its longest function's). */
async function oversized(): Promise<SizeAllowlist> {
  const { limits } = readAllowlist();
  const rule = (max: number): ['error', { max: number; skipBlankLines: true; skipComments: true }] => [
    'error',
    { max, skipBlankLines: true, skipComments: true },
  ];
  const eslint = new ESLint({
    cwd: REPO,
    overrideConfigFile: true,
    overrideConfig: [
      {
        files: ['src/**/*.ts'],
        languageOptions: { parser: tseslint.parser },
        rules: { 'max-lines': rule(limits.fileLines), 'max-lines-per-function': rule(limits.functionLines) },
      },
    ],
  });
  const found: SizeAllowlist = { maxLines: {}, maxLinesPerFunction: {} };
  for (const result of await eslint.lintFiles(['src/**/*.ts'])) {
    const file = relative(REPO, result.filePath);
    for (const message of result.messages) {
      const size = Number(/\((\d+)\)/.exec(message.message)?.[1]);
      if (message.ruleId === 'max-lines') found.maxLines[file] = size;
      if (message.ruleId === 'max-lines-per-function') {
        found.maxLinesPerFunction[file] = Math.max(found.maxLinesPerFunction[file] ?? 0, size);
      }
    }
  }
  return found;
}

describe('the size allowlist', () => {
  it('lists exactly the files over the limits, each with its size today', { timeout: 60_000 }, async () => {
    const listed = readAllowlist();
    const now = await oversized();
    expect(listed.maxLines, 'files over the line limit (update eslint.size-allowlist.json)').toEqual(now.maxLines);
    expect(listed.maxLinesPerFunction, 'files with a function over the limit').toEqual(now.maxLinesPerFunction);
  });

  it('only shrinks', () => {
    const listed = readAllowlist();
    expect(listed.limits).toEqual({ fileLines: 400, functionLines: 80 });
    expect(Object.keys(listed.maxLines).length).toBeLessThanOrEqual(MAX_LISTED_FILES);
    expect(Object.keys(listed.maxLinesPerFunction).length).toBeLessThanOrEqual(MAX_LISTED_FUNCTION_FILES);
  });
});
