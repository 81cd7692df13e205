/**
 * The COMMANDS map: oclif's "explicit" command discovery, so that the whole
 * CLI can be bundled into one file for the single binary.
 */
import type { Command } from '@oclif/core';
import { notBuiltCommand } from './cli/not-built.js';
import { PLANNED_COMMANDS } from './cli/planned-commands.js';
import Version from './commands/version.js';

const BUILT_COMMANDS: Record<string, Command.Class> = {
  version: Version,
};

/** Every command id (oclif's `topic:command` form) to its class. */
export const COMMANDS: Record<string, Command.Class> = {
  ...Object.fromEntries(Object.entries(PLANNED_COMMANDS).map(([id, planned]) => [id, notBuiltCommand(planned)])),
  ...BUILT_COMMANDS,
};
