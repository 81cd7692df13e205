/**
 * Which invocations the lean agent start path may take (see
 * src/cli/agent-fast-path.ts). Kept apart from that module so that an entry
 * point can ask without loading the agent's code.
 */

/** The oclif id of `edgeadm agent edge-proxy`. */
export const EDGE_PROXY_COMMAND_ID = 'agent:edge-proxy';

/**
 * The arguments after the command id if `argv` runs `agent edge-proxy`
 * (in oclif's space or colon form), else undefined.
 */
export function edgeProxyArgs(argv: readonly string[]): string[] | undefined {
  if (argv[0] === EDGE_PROXY_COMMAND_ID) return argv.slice(1);
  if (argv[0] === 'agent' && argv[1] === 'edge-proxy') return argv.slice(2);
  return undefined;
}
