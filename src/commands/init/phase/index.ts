/**
 * `edgeadm init phase <name>`: one subcommand per phase of the init tree,
 * generated from it, each running that phase (and its children) alone with
 * init's flags.
 */
import type { Command } from '@oclif/core';
import { initPhases } from '../../../cluster/init.js';
import { flattenPhases } from '../../../workflow/phase.js';
import Init from '../../init.js';

/** The generated commands, by oclif id (`init:phase:bootstrap-token`). */
export function initPhaseCommands(): Record<string, Command.Class> {
  const commands: Record<string, Command.Class> = {};
  for (const { path, phase } of flattenPhases(initPhases())) {
    if (phase.hidden) continue;
    class InitPhase extends Init {
      static override onlyPhase = path;
      static override summary = `Run init's ${path} phase alone: ${phase.summary}.`;
      static override description = `Runs only the ${path} phase of edgeadm init, with init's flags; it checks before it changes, like a full run.`;
      static override examples = [
        `<%= config.bin %> init phase ${path.replaceAll('/', ' ')} --host root@10.0.0.10 --install-pkg-path ./pkg.tar.gz`,
      ];
    }
    commands[`init:phase:${path.replaceAll('/', ':')}`] = InitPhase;
  }
  return commands;
}
