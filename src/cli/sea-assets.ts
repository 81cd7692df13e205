/**
 * Scripts that the single binary carries as SEA assets, outside its startup
 * snapshot, and compiles only when they are needed (see
 * scripts/build-binary.js). When the bundle runs as a plain script (to debug
 * it), the same scripts are read from the build directory.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { getAsset, isSea } from 'node:sea';
import { Script } from 'node:vm';

/** The asset that holds the lean start path of `agent edge-proxy` (src/cli/agent-fast-path.ts). */
export const AGENT_SCRIPT_ASSET = 'agent-edge-proxy.cjs';

/**
 * Compiles and runs a CommonJS script from the binary's assets (or from
 * `file` outside a single executable) and returns its exports. The script
 * may require Node's built-in modules only: it is a self-contained bundle.
 */
export function requireScriptAsset<T>(asset: string, file: string): T {
  const inSea = isSea();
  const source = inSea ? getAsset(asset, 'utf8') : readFileSync(file, 'utf8');
  const filename = inSea ? process.execPath : file;
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: asset,
  });
  const module = { exports: {} };
  const run = script.runInThisContext() as (...args: unknown[]) => void;
  run(module.exports, createRequire(filename), module, filename, dirname(filename));
  return module.exports as T;
}
