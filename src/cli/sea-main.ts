/**
 * The single binary's entry point. esbuild bundles it with package.json
 * inlined as `__EDGEADM_PJSON__`, so the binary reads no file of its own.
 *
 * The binary is built with a V8 startup snapshot: oclif and the command
 * metadata are loaded at build time, and only `run()` happens at start. The
 * build swaps `../index.js` for a lazy COMMANDS map (see
 * scripts/build-binary.js), so a command's modules are evaluated only when
 * that command runs.
 * The same file also runs as a plain script (no snapshot), for debugging.
 */
import { dirname } from 'node:path';
import { startupSnapshot } from 'node:v8';
import type { Interfaces, Plugin } from '@oclif/core';
import { COMMANDS } from '../index.js';
import { loadBundledPlugin, main } from './main.js';

declare const __EDGEADM_PJSON__: Interfaces.PJSON;
/** Where the build put oclif.manifest.json for the snapshot builder to read. */
declare const __EDGEADM_MANIFEST_DIR__: string | undefined;
const manifestDir = typeof __EDGEADM_MANIFEST_DIR__ === 'string' ? __EDGEADM_MANIFEST_DIR__ : undefined;

let plugin: Plugin | undefined;

async function start(): Promise<void> {
  plugin ??= await loadBundledPlugin(__EDGEADM_PJSON__, COMMANDS, manifestDir);
  const code = await main(process.argv.slice(2), { root: dirname(process.execPath), bundledPlugin: plugin });
  process.exitCode = code;
  // Exit as soon as the event loop is idle; if a stray handle keeps it alive, exit anyway.
  setTimeout(() => process.exit(code), 200).unref();
}

if (startupSnapshot.isBuildingSnapshot()) {
  void loadBundledPlugin(__EDGEADM_PJSON__, COMMANDS, manifestDir).then((loaded) => (plugin = loaded));
  startupSnapshot.setDeserializeMainFunction(() => void start());
} else {
  void start();
}
