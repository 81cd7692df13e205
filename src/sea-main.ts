/**
 * The single binary's entry point. esbuild bundles it with package.json
 * inlined as `__EDGEADM_PJSON__`, so the binary reads no file of its own.
 *
 * `agent edge-proxy` starts from its own small asset script (see
 * scripts/build-binary.js), without oclif: this module looks at the
 * arguments first and loads the CLI (oclif, the lazy COMMANDS map, main)
 * only for any other command, so that a long-running agent on a small edge
 * node never evaluates the CLI's modules.
 *
 * The build may give the binary a V8 startup snapshot (see USE_SNAPSHOT in
 * scripts/build-binary.js): oclif and the command metadata are then loaded at
 * build time and only `run()` happens at start. Every other command is in a
 * script carried as a SEA asset and compiled on its first use. The same file
 * also runs as a plain script (no snapshot), for debugging.
 */
import { dirname } from 'node:path';
import { startupSnapshot } from 'node:v8';
import type { Command, Interfaces, Plugin } from '@oclif/core';
import { edgeProxyArgs } from './cli/agent-argv.js';
import type { runAgentFastPath } from './cli/agent-fast-path.js';
import type * as CliMain from './cli/main.js';
import type * as Index from './index.js';
import { AGENT_SCRIPT_ASSET, requireScriptAsset } from './cli/sea-assets.js';
import { UPLOAD_WORKER_ASSET, UPLOAD_WORKER_ENV } from './hosts/upload-worker-protocol.js';

declare const __EDGEADM_PJSON__: Interfaces.PJSON;
/** Where the build put oclif.manifest.json for the snapshot builder to read. */
declare const __EDGEADM_MANIFEST_DIR__: string | undefined;
const manifestDir = typeof __EDGEADM_MANIFEST_DIR__ === 'string' ? __EDGEADM_MANIFEST_DIR__ : undefined;
/** Where the build put the agent script, for runs as a plain script (outside a single executable). */
declare const __EDGEADM_AGENT_SCRIPT__: string | undefined;
/** Where the build put the upload worker script, for runs as a plain script. */
declare const __EDGEADM_UPLOAD_WORKER_SCRIPT__: string | undefined;

let plugin: Plugin | undefined;

/** The CLI's modules, loaded (bundled lazily: evaluated on this call) only when a command needs oclif. */
async function loadCli(): Promise<{ COMMANDS: typeof Index.COMMANDS; cli: typeof CliMain }> {
  const [{ COMMANDS }, cli] = await Promise.all([import('./index.js'), import('./cli/main.js')]);
  return { COMMANDS, cli };
}

async function start(): Promise<void> {
  // Started by edgeadm itself as an upload's worker process, with an IPC
  // channel (src/hosts/upload-worker-runner.ts): run that script, no CLI.
  if (
    process.env[UPLOAD_WORKER_ENV] === '1' &&
    process.send !== undefined &&
    typeof __EDGEADM_UPLOAD_WORKER_SCRIPT__ === 'string'
  ) {
    requireScriptAsset(UPLOAD_WORKER_ASSET, __EDGEADM_UPLOAD_WORKER_SCRIPT__);
    return;
  }
  const argv = process.argv.slice(2);
  let code: number | undefined;
  // `agent edge-proxy` starts from its own small script, without touching
  // oclif; anything that script does not parse falls through to oclif.
  if (edgeProxyArgs(argv) !== undefined && typeof __EDGEADM_AGENT_SCRIPT__ === 'string') {
    const agent = requireScriptAsset<{ runAgentFastPath: typeof runAgentFastPath }>(
      AGENT_SCRIPT_ASSET,
      __EDGEADM_AGENT_SCRIPT__,
    );
    code = await agent.runAgentFastPath(argv, { version: __EDGEADM_PJSON__.version });
  }
  if (code === undefined) {
    const { COMMANDS, cli } = await loadCli();
    plugin ??= await cli.loadBundledPlugin(__EDGEADM_PJSON__, COMMANDS, manifestDir);
    code = await cli.main(argv, { root: dirname(process.execPath), bundledPlugin: plugin });
  }
  process.exitCode = code;
  // Exit as soon as the event loop is idle; if a stray handle keeps it alive, exit anyway.
  setTimeout(() => process.exit(code), 200).unref();
}

/**
 * Runs, while a snapshot is built, the code every start runs: oclif's
 * `Config.load`, the core command's modules, oclif's flag parser and its help
 * (rendered, not printed). V8 keeps the bytecode of functions compiled by
 * then in the snapshot, so a start no longer compiles them (measured:
 * `Config.load` 3.1 to 1.4 ms). Every result is thrown away: the config a
 * run uses is loaded at run time, from that run's environment (home, XDG
 * directories, terminal), and oclif's config cache is overwritten by that load.
 */
async function warmStartPath(loaded: Plugin, COMMANDS: Record<string, Command.Class>): Promise<void> {
  const { Config, Help, Parser } = await import('@oclif/core');
  /** oclif's help, rendered and dropped: only its code is compiled. */
  class SilentHelp extends Help {
    protected override log(): void {}
  }
  const config = await Config.load({ root: '/', pjson: loaded.pjson, plugins: new Map([[loaded.name, loaded]]) });
  const version = COMMANDS['version']!;
  await Parser.parse([], { flags: { ...version.baseFlags, ...version.flags }, args: version.args ?? {}, strict: true });
  await new SilentHelp(config).showHelp([]);
  await new SilentHelp(config).showHelp(['version']);
}

if (startupSnapshot.isBuildingSnapshot()) {
  void loadCli().then(async ({ COMMANDS, cli }) => {
    plugin = await cli.loadBundledPlugin(__EDGEADM_PJSON__, COMMANDS, manifestDir);
    await warmStartPath(plugin, COMMANDS);
  });
  startupSnapshot.setDeserializeMainFunction(() => void start());
} else {
  void start();
}
