/**
 * `edgeadm agent uninstall`: takes the tunnel agent that `register-cloud`
 * installed off a host: its service stopped and disabled, its unit, its data
 * directory (certificate, key, kubeconfig) and its system user removed. The
 * edgeadm binary stays (an edge-proxy may run from it). The cluster stays
 * registered on the hub until `hub clusters delete` revokes it. Every step
 * checks first, so a second run changes nothing.
 */
import { execOrThrow, type Host } from '../hosts/host.js';
import { DIRECT_SERVICE_DIR, requestedServiceManager, selectServiceManager } from '../hosts/service-manager.js';
import type { Logger } from '../log/run-log.js';
import { AGENT_UNIT_NAME, checkServiceDataDir } from './agent-install.js';
import { TUNNEL_AGENT_USER } from './agent-unit.js';

/** Options of {@link uninstallAgent}. */
export interface AgentUninstallOptions {
  host: Host;
  /** The agent's data directory (register-cloud's `--data-dir`). */
  dataDir: string;
  env: NodeJS.ProcessEnv;
  logger: Logger;
}

/** What `agent uninstall` reports. */
export interface AgentUninstallResult {
  host: string;
  /** What was removed, in order; empty when nothing was there. */
  removed: string[];
  /** The cluster name the agent was registered as, when its data directory said. */
  cluster?: string;
}

function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Removes the agent from the host; see the module comment. */
export async function uninstallAgent(options: AgentUninstallOptions): Promise<AgentUninstallResult> {
  const { host, dataDir } = options;
  checkServiceDataDir(dataDir);
  const facts = await host.facts();
  const serviceManager = selectServiceManager({
    requested: requestedServiceManager(options.env),
    initSystem: facts.initSystem,
    hostName: host.name,
  });
  const removed: string[] = [];
  const settings = await host.exec(`cat ${quote(`${dataDir}/agent.yaml`)}`, { sudo: true, readOnly: true });
  const cluster = settings.exitCode === 0 ? /^cluster:\s*['"]?([a-z0-9.-]+)/m.exec(settings.stdout)?.[1] : undefined;

  const unitFiles = serviceManager.filesOf(AGENT_UNIT_NAME);
  const present = async (path: string): Promise<boolean> => host.exists(path, { sudo: true });
  if ((await serviceManager.isActive(host, AGENT_UNIT_NAME)) || (await present(unitFiles[0] ?? ''))) {
    await serviceManager.stop(host, AGENT_UNIT_NAME);
    removed.push(`service ${AGENT_UNIT_NAME}`);
  }
  for (const file of unitFiles) {
    if (!(await present(file))) continue;
    await execOrThrow(host, `rm -f ${quote(file)}`, { sudo: true, description: `remove ${file}` });
    removed.push(file);
  }
  if (serviceManager.kind === 'direct') {
    // The direct manager's directory, once no other service's pid file or log is in it.
    await host.exec(`rmdir ${quote(DIRECT_SERVICE_DIR)} 2>/dev/null || true`, { sudo: true });
  }
  if (serviceManager.kind === 'systemd' && removed.length > 0) {
    await execOrThrow(host, 'systemctl daemon-reload', { sudo: true, description: 'reload systemd' });
  }
  if (await present(dataDir)) {
    await execOrThrow(host, `rm -rf ${quote(dataDir)}`, { sudo: true, description: `remove ${dataDir}` });
    removed.push(dataDir);
  }
  const hasUser = await host.exec(`getent passwd ${TUNNEL_AGENT_USER}`, { sudo: true, readOnly: true });
  if (hasUser.exitCode === 0 && hasUser.stdout.trim() !== '') {
    await execOrThrow(
      host,
      // --force: the agent stopped above may still be exiting under this uid, as in agent-install.ts's undo.
      `userdel --force ${TUNNEL_AGENT_USER} && { ! getent group ${TUNNEL_AGENT_USER} >/dev/null || groupdel ${TUNNEL_AGENT_USER}; }`,
      { sudo: true, description: `remove the user ${TUNNEL_AGENT_USER}` },
    );
    removed.push(`user ${TUNNEL_AGENT_USER}`);
  }
  options.logger.info(
    removed.length === 0 ? `no tunnel agent on ${host.name}` : `removed from ${host.name}: ${removed.join(', ')}`,
  );
  return { host: host.name, removed, ...(cluster === undefined ? {} : { cluster }) };
}
