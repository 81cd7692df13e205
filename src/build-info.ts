/**
 * What this edgeadm build is: its version and git commit.
 *
 * The single binary gets both from esbuild's `define` at bundle time. A
 * source checkout reads the version from package.json and the commit from
 * `lib/build-info.json`, which `npm run build` writes.
 */
import { readFileSync } from 'node:fs';

declare const __EDGEADM_BUILD__: BuildInfo | undefined;

/** Version and commit of this build. */
export interface BuildInfo {
  version: string;
  commit: string;
}

let cached: BuildInfo | undefined;

/** The build's version and commit (`unknown` when not recorded). */
export function buildInfo(): BuildInfo {
  if (cached) return cached;
  if (typeof __EDGEADM_BUILD__ !== 'undefined') return (cached = __EDGEADM_BUILD__);
  cached = {
    version: readJson('../package.json')?.version ?? '0.0.0',
    commit: readJson('./build-info.json')?.commit ?? 'unknown',
  };
  return cached;
}

function readJson(relative: string): Record<string, string> | undefined {
  try {
    return JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as Record<string, string>;
  } catch {
    return undefined;
  }
}
