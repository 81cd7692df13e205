/**
 * `fleet plan`: what a fleet command would do on each host, and in which
 * wave, without connecting anywhere. Pure.
 */
import type { FleetHost } from './inventory/types.js';
import { planWaves, type RolloutOptions } from './rollout.js';

/** The fleet commands a plan can be made for. */
export const PLANNABLE_COMMANDS = ['up', 'join', 'reset', 'check'] as const;
export type PlannableCommand = (typeof PLANNABLE_COMMANDS)[number];

/** One host in the plan. */
export interface FleetPlanEntry {
  host: string;
  /** `user@address:port` as it would be reached, and through which bastions. */
  target: string;
  via: string[];
  role: FleetHost['role'];
  groups: string[];
  wave: number;
  /** What would be done, in words. */
  action: string;
  packagePath?: string;
}

/** Options of {@link planFleet}. */
export interface FleetPlanOptions extends Pick<RolloutOptions, 'canary' | 'waveSize'> {
  command: PlannableCommand;
  hosts: FleetHost[];
}

/** The plan, host by host, in the order hosts would start. */
export function planFleet(options: FleetPlanOptions): FleetPlanEntry[] {
  const waves = planWaves(
    options.hosts.map((host) => host.name),
    options,
  );
  const waveOf = new Map(waves.flatMap((wave, index) => wave.map((name) => [name, index + 1] as const)));
  const firstControlPlane = options.hosts.find((host) => host.role === 'control-plane')?.name;
  return options.hosts.map((host) => {
    const user = host.ssh.user === undefined ? '' : `${host.ssh.user}@`;
    const port = host.ssh.port === undefined ? '' : `:${host.ssh.port}`;
    return {
      host: host.name,
      target: `${user}${host.address}${port}`,
      via: host.ssh.jumps ?? [],
      role: host.role,
      groups: host.groups,
      wave: waveOf.get(host.name)!,
      action: actionFor(options.command, host, host.name === firstControlPlane),
      ...(host.packagePath === undefined ? {} : { packagePath: host.packagePath }),
    };
  });
}

function actionFor(command: PlannableCommand, host: FleetHost, isFirstControlPlane: boolean): string {
  const kind = host.isEdge ? 'edge node' : host.role === 'control-plane' ? 'control-plane node' : 'worker node';
  switch (command) {
    case 'check':
      return `host check for a ${host.role} node`;
    case 'reset':
      return `reset the ${kind}`;
    case 'join':
      return host.role === 'control-plane' ? 'none (control-plane host; fleet join joins nodes)' : `join as ${kind}`;
    case 'up':
      if (isFirstControlPlane) return 'init the control plane (if not yet done) and create a join token';
      if (host.role === 'control-plane') return 'none: fleet up inits one control-plane host (more are not built yet)';
      return `join as ${kind}`;
  }
}
