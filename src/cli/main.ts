/**
 * The entry point shared by `bin/run.js` (a source checkout or npm install)
 * and the single binary. It loads oclif's config, runs the command, and
 * renders errors that happen outside any command (an unknown command, say)
 * the same way BaseCommand renders the rest.
 */
import { Config, Errors, Plugin, flush, run, type Command, type Interfaces } from '@oclif/core';
import { Redactor } from '../log/redact.js';
import { errorDocument, renderErrorText, toEdgeadmError } from './render-error.js';
import { styleFor } from './style.js';

export interface MainOptions {
  /** The package root (where package.json is), or the binary's directory. */
  root: string;
  /**
   * For the single binary: the root plugin, loaded from package.json inlined
   * at bundle time and the COMMANDS map (see {@link loadBundledPlugin}).
   */
  bundledPlugin?: Plugin;
}

/** Runs edgeadm with `argv` and returns the process exit code. */
export async function main(argv: string[], options: MainOptions): Promise<number> {
  try {
    const plugin = options.bundledPlugin;
    const config = plugin
      ? await Config.load({ root: options.root, pjson: plugin.pjson, plugins: new Map([[plugin.name, plugin]]) })
      : await Config.load(options.root);
    await run(argv, config);
    await flush();
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof Errors.ExitError) return error.oclif.exit ?? 1;
    const failure = toEdgeadmError(error);
    const redactor = new Redactor();
    if (argv.includes('--json')) {
      process.stdout.write(`${JSON.stringify(errorDocument(failure, redactor), null, 2)}\n`);
    } else {
      process.stderr.write(`${renderErrorText(failure, redactor, styleFor(process.stderr))}\n`);
    }
    return failure.exitCode;
  }
}

/**
 * The root plugin for the single binary: oclif's documented "explicit"
 * strategy, with the COMMANDS map handed over directly instead of imported
 * from a target file, which does not exist inside a single executable.
 *
 * With `manifestDir`, the command metadata (ids, flags, help) comes from the
 * `oclif.manifest.json` there, read once while the binary's startup snapshot
 * is built; a command's class is then touched only when that command runs,
 * so a lazy COMMANDS map evaluates one command's modules, not all of them.
 */
export async function loadBundledPlugin(
  pjson: Interfaces.PJSON,
  commands: Record<string, Command.Class>,
  manifestDir?: string,
): Promise<Plugin> {
  const plugin = new Plugin({
    isRoot: true,
    // Package.json is inline; the root is read only for the manifest, if any.
    root: manifestDir ?? '/nonexistent/edgeadm',
    pjson,
    ignoreManifest: manifestDir === undefined,
  });
  // oclif keeps the loaded COMMANDS export here (TypeScript-private, present
  // since the explicit strategy arrived in @oclif/core 3.21). The binary's
  // smoke test runs every command, so a change here cannot pass unnoticed.
  (plugin as unknown as { commandCache: Record<string, Command.Class> }).commandCache = commands;
  await plugin.load();
  return plugin;
}
