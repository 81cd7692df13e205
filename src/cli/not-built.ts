/**
 * Commands that are registered (so `--help` shows the whole tool) but not
 * built yet. They say so plainly, do nothing, and exit 3. Nothing pretends
 * to work.
 */
import { NotBuiltError } from '../errors.js';
import { BaseCommand } from './base-command.js';

/** What the placeholder shows in `--help`: the command as it is planned. */
export interface PlannedCommand {
  summary: string;
  description?: string;
  examples: string[];
}

/** Makes a placeholder command class for a planned command. */
export function notBuiltCommand(planned: PlannedCommand): typeof BaseCommand {
  class NotBuilt extends BaseCommand<typeof NotBuilt> {
    static override summary = `${planned.summary} (not built yet)`;
    static override description = [
      planned.description,
      'This command is planned but not built in this version: it does nothing and exits with code 3.',
    ]
      .filter(Boolean)
      .join('\n\n');
    static override examples = planned.examples;
    static override strict = false;

    /** A planned command's flags are not defined yet: accept any input, then say it is not built. */
    override async init(): Promise<void> {
      try {
        await super.init();
      } catch {
        // Parsing failed on a flag the placeholder does not know; run() reports what matters.
      }
    }

    async run(): Promise<never> {
      throw new NotBuiltError((this.id ?? 'command').replaceAll(':', ' '), this.config.version);
    }
  }
  return NotBuilt as unknown as typeof BaseCommand;
}
