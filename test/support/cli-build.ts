/**
 * Makes sure the compiled CLI (lib/) is not older than the sources a test
 * depends on, so that `npx vitest run <file>` tests the code in the tree and
 * not a stale build. `npm test` builds first anyway; this only rebuilds when
 * something listed changed since.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './cli.js';

function newestMtime(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((entry) => newestMtime(join(path, entry))));
}

/**
 * Rebuilds lib/ (tsc, then the oclif manifest) when `built` (relative to
 * lib/) is missing or older than any of `sources` (relative to the repo).
 */
export function ensureCliBuilt(built: string, sources: string[]): void {
  const output = join(REPO_ROOT, 'lib', built);
  const newestSource = Math.max(...sources.map((source) => newestMtime(join(REPO_ROOT, source))));
  if (existsSync(output) && statSync(output).mtimeMs >= newestSource) return;
  const node = process.execPath;
  try {
    execFileSync(node, [join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
      cwd: REPO_ROOT,
      stdio: 'pipe',
    });
  } catch (error) {
    // Type errors elsewhere in the tree still emit JavaScript; only a missing output is fatal.
    if (!existsSync(output)) throw error;
  }
  execFileSync(node, [join(REPO_ROOT, 'scripts/manifest.js')], { cwd: REPO_ROOT, stdio: 'pipe' });
}
