/**
 * The commands edgeadm will have but does not have yet. Each is registered
 * as a placeholder (see not-built.ts) so that `--help` shows the whole tool
 * and scripts get a clear "not built yet" (exit 3) instead of "unknown
 * command". When a command is built, its entry moves out of this table and
 * into a file under src/commands.
 */
import type { PlannedCommand } from './not-built.js';

/** Planned command id (oclif's `topic:command` form) to its help. */
export const PLANNED_COMMANDS: Record<string, PlannedCommand> = {};
