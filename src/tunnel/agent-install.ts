/**
 * Installing the tunnel agent as a service on a host (`register-cloud`
 * without `--foreground`, on this machine or on `--host`), through the
 * `Host` interface: the edgeadm binary, the data directory with the agent's
 * credentials (0700, files 0600), the systemd unit, and the service started
 * by the host's service manager.
 *
 * Every step checks before it changes, so a re-run changes nothing. A
 * failure undoes what this run changed (files it created are removed,
 * files it replaced are put back, a service it started is stopped), so the
 * host is left as it was found.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DIRECT_SERVICE_DIR, type ServiceManager, type StartOutcome } from '../cluster/service-manager.js';
import { EdgeadmError, ValidationError } from '../errors.js';
import { execOrThrow, type Host } from '../hosts/host.js';
import type { Logger } from '../log/run-log.js';
import { writeAgentState, type AgentState } from './agent-state.js';
import { renderTunnelAgentUnit } from './agent-unit.js';
import { AGENT_KUBECONFIG_FILE } from './registration.js';

/** The unit's name on the host. */
export const AGENT_UNIT_NAME = 'edgeadm-tunnel-agent.service';
/** Where the edgeadm binary goes on the host. */
export const AGENT_BINARY_PATH = '/usr/local/bin/edgeadm';
/** How long a freshly started agent must stay up before the install counts as done. */
export const AGENT_START_SETTLE_MS = 3_000;
/** Suffix of the copy a replaced file is kept under until the install succeeds. */
const BACKUP_SUFFIX = '.edgeadm-prev';
/** Data directory paths that are safe in a unit file and a shell command. */
const SAFE_PATH = /^\/[A-Za-z0-9._/-]*$/;

/** Options of {@link installAgentService}. */
export interface AgentInstallOptions {
  host: Host;
  serviceManager: ServiceManager;
  /** The registration to install; its `kubeconfig` is the local file whose content becomes the agent's. */
  state: AgentState;
  /** The data directory on the host. */
  dataDir: string;
  /** The local edgeadm binary to copy to the host. */
  binary: string;
  logger: Logger;
}

/** What {@link installAgentService} did. */
export interface AgentInstallResult {
  host: string;
  /** Paths written or replaced on the host (empty on an idempotent re-run). */
  changed: string[];
  service: StartOutcome;
}

/**
 * Refuses a data directory that cannot go into a unit file and a shell
 * command as it is.
 *
 * @throws {ValidationError} `E_AGENT_DATA_DIR`.
 */
export function checkServiceDataDir(dataDir: string): void {
  if (!SAFE_PATH.test(dataDir) || dataDir.split('/').includes('..')) {
    throw new ValidationError(`--data-dir ${JSON.stringify(dataDir)} cannot be used for the agent service`, {
      code: 'E_AGENT_DATA_DIR',
      hints: ['Use an absolute path of letters, digits, ".", "_", "-" and "/" only, without "..".'],
    });
  }
}

function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** One file written by this run, and how to undo it. */
interface Written {
  path: string;
  backup?: string;
}

/**
 * Installs and starts the agent service; see the module comment.
 *
 * @throws {EdgeadmError} `E_AGENT_INSTALL` (after undoing this run's changes).
 */
export async function installAgentService(options: AgentInstallOptions): Promise<AgentInstallResult> {
  const { host, serviceManager, dataDir, logger } = options;
  checkServiceDataDir(dataDir);
  const stage = mkdtempSync(join(tmpdir(), 'edgeadm-agent-stage-'));
  const written: Written[] = [];
  let isDataDirCreated = false;
  let wasRunning = false;
  let hasStarted = false;
  try {
    // Stage the data directory locally in the agent's own format, with the kubeconfig path it will have there.
    const remoteKubeconfig = `${dataDir}/${AGENT_KUBECONFIG_FILE}`;
    writeAgentState(stage, { ...options.state, kubeconfig: remoteKubeconfig });
    writeFileSync(join(stage, AGENT_KUBECONFIG_FILE), readFileSync(options.state.kubeconfig), { mode: 0o600 });

    const put = async (source: string | Buffer, path: string, mode: number, description: string): Promise<void> => {
      const content = typeof source === 'string' ? readFileSync(source) : source;
      const existing = await host.sha256(path, { sudo: true });
      const { createHash } = await import('node:crypto');
      if (existing === createHash('sha256').update(content).digest('hex')) {
        await execOrThrow(host, `chmod ${mode.toString(8)} ${quote(path)}`, { sudo: true, description });
        return;
      }
      const record: Written = { path };
      if (existing !== undefined) {
        record.backup = `${path}${BACKUP_SUFFIX}`;
        await execOrThrow(host, `cp -p ${quote(path)} ${quote(record.backup)}`, {
          sudo: true,
          description: `keep a copy of ${path} until the install succeeds`,
        });
      }
      written.push(record);
      await host.put(content, path, { mode, sudo: true, description });
    };

    wasRunning = await serviceManager.isActive(host, AGENT_UNIT_NAME);
    if (!(await host.exists(dataDir, { sudo: true }))) {
      await execOrThrow(host, `mkdir -p ${quote(dataDir)}`, { sudo: true, description: `create ${dataDir}` });
      isDataDirCreated = true;
    }
    await execOrThrow(host, `chmod 700 ${quote(dataDir)}`, { sudo: true, description: `make ${dataDir} private` });
    await put(options.binary, AGENT_BINARY_PATH, 0o755, `install the edgeadm binary at ${AGENT_BINARY_PATH}`);
    for (const file of readdirSync(stage).sort()) {
      const mode = file === 'hub-ca.crt' ? 0o644 : 0o600;
      await put(join(stage, file), `${dataDir}/${file}`, mode, `write the agent's ${file} (mode ${mode.toString(8)})`);
    }
    const unit = {
      name: AGENT_UNIT_NAME,
      content: renderTunnelAgentUnit({ edgeadmBinary: AGENT_BINARY_PATH, dataDir }),
    };
    const unitPath = serviceManager.filesOf(AGENT_UNIT_NAME)[0] ?? '';
    const unitBefore = await host.sha256(unitPath, { sudo: true });
    if (unitBefore !== undefined) {
      await execOrThrow(host, `cp -p ${quote(unitPath)} ${quote(unitPath + BACKUP_SUFFIX)}`, { sudo: true });
    }
    if (await serviceManager.install(host, unit)) {
      written.push({ path: unitPath, ...(unitBefore === undefined ? {} : { backup: unitPath + BACKUP_SUFFIX }) });
    } else if (unitBefore !== undefined) {
      await host.exec(`rm -f ${quote(unitPath + BACKUP_SUFFIX)}`, { sudo: true });
    }
    const service = await serviceManager.ensureRunning(host, unit, { isRestartNeeded: written.length > 0 });
    hasStarted = service !== 'already-running';
    if (hasStarted) {
      await sleep(AGENT_START_SETTLE_MS);
      if (!(await serviceManager.isActive(host, AGENT_UNIT_NAME))) {
        throw new EdgeadmError(`the agent service ${AGENT_UNIT_NAME} stopped right after it started`, {
          code: 'E_AGENT_INSTALL',
        });
      }
    }
    const backups = written.flatMap((w) => (w.backup === undefined ? [] : [quote(w.backup)]));
    if (backups.length > 0) await host.exec(`rm -f ${backups.join(' ')}`, { sudo: true });
    logger.info(
      written.length === 0
        ? `the agent on ${host.name} is already installed and running`
        : `installed the agent on ${host.name} (${written.map((w) => w.path).join(', ')}); service ${service}`,
    );
    return { host: host.name, changed: written.map((w) => w.path), service };
  } catch (error) {
    await undo({ host, serviceManager, written, isDataDirCreated, dataDir, wasRunning, hasStarted, logger });
    const failure = error as Error;
    throw new EdgeadmError(
      `installing the agent on ${host.name} failed, and its changes were undone: ${failure.message}`,
      {
        code: 'E_AGENT_INSTALL',
        cause: error,
        hints: [
          serviceManager.kind === 'direct'
            ? `The service log is under /var/lib/edgeadm/services/${AGENT_UNIT_NAME}.log on the host.`
            : `See "journalctl -u ${AGENT_UNIT_NAME}" on the host.`,
          'Fix the cause and run the same command again; the registration with the hub is kept for the re-run.',
        ],
      },
    );
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

async function undo(options: {
  host: Host;
  serviceManager: ServiceManager;
  written: Written[];
  isDataDirCreated: boolean;
  dataDir: string;
  wasRunning: boolean;
  hasStarted: boolean;
  logger: Logger;
}): Promise<void> {
  const { host, logger } = options;
  const attempt = async (what: string, run: () => Promise<unknown>): Promise<void> => {
    try {
      await run();
    } catch (error) {
      logger.warn(`could not ${what} on ${host.name}: ${(error as Error).message}`);
    }
  };
  if (options.hasStarted && !options.wasRunning) {
    await attempt(`stop ${AGENT_UNIT_NAME}`, () => options.serviceManager.stop(host, AGENT_UNIT_NAME));
    // The direct manager's pid file and log are part of what this run created.
    if (options.serviceManager.kind === 'direct') {
      const files = options.serviceManager.filesOf(AGENT_UNIT_NAME).slice(1).map(quote).join(' ');
      await attempt('remove the service files', () =>
        host.exec(`rm -f ${files}; rmdir ${quote(DIRECT_SERVICE_DIR)} 2>/dev/null || true`, { sudo: true }),
      );
    }
  }
  for (const file of [...options.written].reverse()) {
    const script =
      file.backup === undefined ? `rm -f ${quote(file.path)}` : `mv -f ${quote(file.backup)} ${quote(file.path)}`;
    await attempt(`undo ${file.path}`, () => execOrThrow(host, script, { sudo: true }));
  }
  if (options.isDataDirCreated) {
    await attempt(`remove ${options.dataDir}`, () =>
      execOrThrow(host, `rm -rf ${quote(options.dataDir)}`, { sudo: true }),
    );
  }
  if (options.wasRunning) {
    await attempt('restart the agent as it was', async () => {
      const unitPath = options.serviceManager.filesOf(AGENT_UNIT_NAME)[0] ?? '';
      const content = (await host.exec(`cat ${quote(unitPath)}`, { sudo: true })).stdout;
      await options.serviceManager.ensureRunning(host, { name: AGENT_UNIT_NAME, content }, { isRestartNeeded: true });
    });
  }
}
