/**
 * `fleet plan`: what a fleet command would do on each host, and in which
 * wave, without connecting anywhere. Pure. For `up`, the first control
 * plane is wave 1, each joining control plane has a wave of its own (they
 * join one at a time), and the node waves follow.
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
  /** The control planes' shared address (`up`), when the inventory sets one. */
  controlPlaneEndpoint?: string;
}

/** The plan, host by host, in the order hosts would start. */
export function planFleet(options: FleetPlanOptions): FleetPlanEntry[] {
  const controlPlanes = options.hosts.filter((host) => host.role === 'control-plane').map((host) => host.name);
  const waves =
    options.command === 'up'
      ? [
          ...controlPlanes.map((name) => [name]),
          ...planWaves(
            options.hosts.filter((host) => host.role !== 'control-plane').map((host) => host.name),
            options,
          ),
        ]
      : planWaves(
          options.hosts.map((host) => host.name),
          options,
        );
  const waveOf = new Map(waves.flatMap((wave, index) => wave.map((name) => [name, index + 1] as const)));
  const context: ActionContext = {
    firstControlPlane: controlPlanes[0],
    hasJoiningControlPlanes: controlPlanes.length > 1,
    endpoint: options.controlPlaneEndpoint,
  };
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
      action: actionFor(options.command, host, context),
      ...(host.packagePath === undefined ? {} : { packagePath: host.packagePath }),
    };
  });
}

interface ActionContext {
  firstControlPlane: string | undefined;
  hasJoiningControlPlanes: boolean;
  endpoint: string | undefined;
}

function actionFor(command: PlannableCommand, host: FleetHost, context: ActionContext): string {
  const kind = host.isEdge ? 'edge node' : host.role === 'control-plane' ? 'control-plane node' : 'worker node';
  switch (command) {
    case 'check':
      return `host check for a ${host.role} node`;
    case 'reset':
      return `reset the ${kind}`;
    case 'join':
      return host.role === 'control-plane' ? 'none (control-plane host; fleet join joins nodes)' : `join as ${kind}`;
    case 'up': {
      const { endpoint } = context;
      if (host.name === context.firstControlPlane) {
        if (endpoint === undefined) return 'init the control plane (if not yet done) and create a join token';
        return context.hasJoiningControlPlanes
          ? `init the first control plane for endpoint ${endpoint} (if not yet done), upload the control-plane join credential and create a join token`
          : `init the control plane for endpoint ${endpoint} (if not yet done) and create a join token`;
      }
      if (host.role === 'control-plane') {
        return `join as control plane through ${endpoint ?? '<no endpoint>'}, after the ones before it; a failure stops the run`;
      }
      return `join as ${kind}`;
    }
  }
}
