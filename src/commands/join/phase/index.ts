/**
 * `edgeadm join phase <name>`: one subcommand per phase of the join tree,
 * generated from it. `join phase discovery` is its own command (it writes
 * the bootstrap kubeconfig without a host), so it is not generated here.
 */
import type { Command } from '@oclif/core';
import { joinPhases } from '../../../cluster/join.js';
import { flattenPhases } from '../../../workflow/phase.js';
import Join from '../../join.js';

/** The generated commands, by oclif id (`join:phase:node-join`). */
export function joinPhaseCommands(): Record<string, Command.Class> {
  const commands: Record<string, Command.Class> = {};
  for (const { path, phase } of flattenPhases(joinPhases())) {
    if (phase.hidden || path === 'discovery') continue;
    class JoinPhase extends Join {
      static override onlyPhase = path;
      static override summary = `Run join's ${path} phase alone: ${phase.summary}.`;
      static override description = `Runs only the ${path} phase of edgeadm join, with join's flags (discovery runs first when the phase needs it).`;
      static override examples = [
        `<%= config.bin %> join phase ${path.replaceAll('/', ' ')} 10.0.0.10:6443 --token … --discovery-token-ca-cert-hash sha256:<hash> --install-pkg-path ./pkg.tar.gz`,
      ];
    }
    commands[`join:phase:${path.replaceAll('/', ':')}`] = JoinPhase;
  }
  return commands;
}
