/**
 * The entry point shared by `bin/run.js` (a source checkout or npm install)
 * and the single binary. It loads oclif's config, runs the command, and
 * renders errors that happen outside any command (an unknown command, say)
 * the same way BaseCommand renders the rest.
 */
import { Config, Errors, Plugin, flush, run, type Command, type Interfaces } from '@oclif/core';
import { EdgeadmError } from '../errors.js';
import { Redactor } from '../log/redact.js';
import { suggestCommands } from './suggest.js';
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
  let config: Config | undefined;
  try {
    const plugin = options.bundledPlugin;
    config = plugin
      ? await Config.load({ root: options.root, pjson: plugin.pjson, plugins: new Map([[plugin.name, plugin]]) })
      : await Config.load(options.root);
    await run(helpAsFlag(argv), config);
    await flush();
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof Errors.ExitError) return error.oclif.exit ?? 1;
    const failure = withSuggestions(toEdgeadmError(error), error, config);
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
 * `edgeadm help init` as `edgeadm init --help`, the way kubeadm and kubectl
 * take it (oclif's help command is a plugin edgeadm does not bundle).
 */
export function helpAsFlag(argv: readonly string[]): string[] {
  if (argv[0] !== 'help') return [...argv];
  return [...argv.slice(1), '--help'];
}

/** An unknown command's error, with the closest commands as "did you mean" hints. */
function withSuggestions(failure: EdgeadmError, error: unknown, config: Config | undefined): EdgeadmError {
  if (failure.code !== 'E_UNKNOWN_COMMAND' || config === undefined) return failure;
  const typed = /command (.*) not found/i.exec(error instanceof Error ? error.message : '')?.[1] ?? '';
  const ids = [
    ...config.commands.filter((command) => !command.hidden).map((command) => command.id),
    ...config.topics.filter((topic) => !topic.hidden).map((topic) => topic.name),
  ];
  const suggestions = suggestCommands(typed, ids);
  if (suggestions.length === 0) return failure;
  return new EdgeadmError(failure.message, {
    code: failure.code,
    exitCode: failure.exitCode,
    hints: [`Did you mean ${suggestions.map((id) => `"edgeadm ${id}"`).join(' or ')}?`, ...failure.hints],
    cause: failure.cause,
  });
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
