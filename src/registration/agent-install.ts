/**
 * Installing the tunnel agent as a service on a host (`register-cloud`
 * without `--foreground`, on this machine or on `--host`), through the
 * `Host` interface: the agent's own system user (`edgeadm-agent`, made when
 * missing), the edgeadm binary, the data directory with the agent's
 * credentials (0700, files 0600, all owned by that user, so the agent can
 * read them and renew its certificate without root), the systemd unit, and
 * the service started by the host's service manager.
 *
 * Every step checks before it changes, so a re-run changes nothing. A
 * failure undoes what this run changed (files it created are removed,
 * files it replaced are put back, a service it started is stopped, a user
 * it made is removed), so the host is left as it was found.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DIRECT_SERVICE_DIR, type ServiceManager, type StartOutcome } from '../hosts/service-manager.js';
import { dump, load } from 'js-yaml';
import { EdgeadmError, ValidationError } from '../errors.js';
import { execOrThrow, type Host } from '../hosts/host.js';
import { kubeconfigRefersToFiles, readKubeconfigFile, renderKubeconfig } from '../kube/kubeconfig.js';
import type { Logger } from '../log/run-log.js';
import { writeAgentState, type AgentState } from './agent-state.js';
import { renderTunnelAgentUnit, TUNNEL_AGENT_USER } from './agent-unit.js';
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
/**
 * Where the service cannot see (ProtectHome=yes hides the first three,
 * PrivateTmp=yes gives it its own /tmp and /var/tmp), so a data directory
 * there would be empty to the agent.
 */
const HIDDEN_FROM_SERVICE = ['/home', '/root', '/run/user', '/tmp', '/var/tmp'];
/** The context (and cluster and user) name of a kubeconfig written out for the agent. */
const AGENT_KUBECONFIG_CONTEXT = 'edgeadm-tunnel-agent';
/** `user:group` of everything in the data directory. */
const AGENT_OWNER = `${TUNNEL_AGENT_USER}:${TUNNEL_AGENT_USER}`;

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
  const normal = dataDir.replace(/\/+/g, '/').replace(/\/$/, '');
  const hidden = HIDDEN_FROM_SERVICE.find((dir) => normal === dir || normal.startsWith(`${dir}/`));
  if (hidden !== undefined) {
    throw new ValidationError(`--data-dir ${dataDir} is under ${hidden}, which the agent service cannot see`, {
      code: 'E_AGENT_DATA_DIR',
      hints: [
        `The agent's unit hides ${HIDDEN_FROM_SERVICE.join(', ')} from it (ProtectHome=yes, PrivateTmp=yes); use a directory elsewhere, such as /var/lib/edgeadm/agent.`,
      ],
    });
  }
}

/**
 * Makes the agent's system user and group unless the host has them; true
 * when this call made them. A system account: no home, no login shell.
 *
 * @throws {EdgeadmError} `E_AGENT_USER` when the host has no `useradd`.
 */
async function ensureAgentUser(host: Host): Promise<boolean> {
  const found = await host.exec(`id -u ${TUNNEL_AGENT_USER}`, { sudo: true, readOnly: true });
  if (found.exitCode === 0 && found.dryRun !== true) return false;
  const made = await host.exec(
    `useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin --comment 'edgeadm tunnel agent' ${TUNNEL_AGENT_USER}`,
    { sudo: true, description: `create the system user ${TUNNEL_AGENT_USER} the agent runs as` },
  );
  if (made.exitCode !== 0) {
    throw new EdgeadmError(
      `cannot create the system user ${TUNNEL_AGENT_USER} on ${host.name}: ${made.stderr.trim() || `exit ${made.exitCode}`}`,
      {
        code: 'E_AGENT_USER',
        hints: [
          `Create a system user and group named ${TUNNEL_AGENT_USER} on the host (no home, no login shell), then run the same command again.`,
        ],
      },
    );
  }
  return true;
}

function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * The kubeconfig the agent gets in its data directory: the given file as it
 * is when it holds its credentials inline, else one written out with every
 * file it refers to (CA, client certificate and key, token file) read here
 * and inlined. The agent reads nothing outside its data directory (its own
 * user could not read root's files), and those files are on this machine,
 * not necessarily on the host.
 */
export async function agentKubeconfigContent(path: string): Promise<Buffer> {
  const given = readFileSync(path);
  if (!kubeconfigRefersToFiles(given.toString('utf8'), path)) return given;
  const credentials = await readKubeconfigFile(path);
  const rendered = renderKubeconfig(credentials, AGENT_KUBECONFIG_CONTEXT);
  if (credentials.isInsecureSkipTlsVerify !== true) return Buffer.from(rendered);
  // renderKubeconfig writes no TLS opt-out; the given kubeconfig had one, and keeps it.
  const document = load(rendered) as { clusters: { cluster: Record<string, unknown> }[] };
  for (const entry of document.clusters) entry.cluster['insecure-skip-tls-verify'] = true;
  return Buffer.from(dump(document, { lineWidth: -1, noRefs: true }));
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
  let isUserCreated = false;
  let wasRunning = false;
  let hasStarted = false;
  try {
    // Stage the data directory locally in the agent's own format, with the kubeconfig path it will have there.
    const remoteKubeconfig = `${dataDir}/${AGENT_KUBECONFIG_FILE}`;
    writeAgentState(stage, { ...options.state, kubeconfig: remoteKubeconfig });
    writeFileSync(join(stage, AGENT_KUBECONFIG_FILE), await agentKubeconfigContent(options.state.kubeconfig), {
      mode: 0o600,
    });

    const put = async (
      source: string | Buffer,
      path: string,
      file: { mode: number; owner: string },
      description: string,
    ): Promise<void> => {
      const { mode, owner } = file;
      const content = typeof source === 'string' ? readFileSync(source) : source;
      const existing = await host.sha256(path, { sudo: true });
      const { createHash } = await import('node:crypto');
      if (existing === createHash('sha256').update(content).digest('hex')) {
        // -h: a link in the agent's own directory is changed itself, never what it points to.
        await execOrThrow(host, `chown -h ${owner} ${quote(path)} && chmod ${mode.toString(8)} ${quote(path)}`, {
          sudo: true,
          description,
        });
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
      await host.put(content, path, { mode, owner, sudo: true, description });
    };

    wasRunning = await serviceManager.isActive(host, AGENT_UNIT_NAME);
    isUserCreated = await ensureAgentUser(host);
    if (!(await host.exists(dataDir, { sudo: true }))) {
      await execOrThrow(host, `mkdir -p ${quote(dataDir)}`, { sudo: true, description: `create ${dataDir}` });
      isDataDirCreated = true;
    }
    // A data directory root still owns was written by root only (an agent
    // from before it had a user of its own): all of it goes to the agent.
    // One the agent owns already may hold what the agent put there, so only
    // the files written below change owner, one by one.
    await execOrThrow(
      host,
      [
        `[ "$(stat -c %U ${quote(dataDir)})" = ${TUNNEL_AGENT_USER} ] || chown -R -h ${AGENT_OWNER} ${quote(dataDir)}`,
        `chmod 700 ${quote(dataDir)}`,
      ].join(' && '),
      { sudo: true, description: `give ${dataDir} to ${TUNNEL_AGENT_USER}, private (0700)` },
    );
    await put(
      options.binary,
      AGENT_BINARY_PATH,
      { mode: 0o755, owner: 'root' },
      `install the edgeadm binary at ${AGENT_BINARY_PATH}`,
    );
    for (const file of readdirSync(stage).sort()) {
      const mode = file === 'hub-ca.crt' ? 0o644 : 0o600;
      await put(
        join(stage, file),
        `${dataDir}/${file}`,
        { mode, owner: AGENT_OWNER },
        `write the agent's ${file} (mode ${mode.toString(8)}, owner ${TUNNEL_AGENT_USER})`,
      );
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
    // The direct manager's log goes with the undo: keep what the agent said for the error.
    const agentOutput = serviceManager.kind === 'direct' && hasStarted ? await lastLogLines(host, serviceManager) : '';
    await undo({
      host,
      serviceManager,
      written,
      isDataDirCreated,
      isUserCreated,
      dataDir,
      wasRunning,
      hasStarted,
      logger,
    });
    const failure = error as Error;
    throw new EdgeadmError(
      `installing the agent on ${host.name} failed, and its changes were undone: ${failure.message}`,
      {
        code: 'E_AGENT_INSTALL',
        cause: error,
        hints: [
          serviceManager.kind === 'direct'
            ? agentOutput === ''
              ? 'The agent printed nothing before it stopped.'
              : `The agent's last output (its log went with the undo):\n${agentOutput}`
            : `See "journalctl -u ${AGENT_UNIT_NAME}" on the host.`,
          'Fix the cause and run the same command again; the registration with the hub is kept for the re-run.',
        ],
      },
    );
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

/** The last lines of the direct service manager's log of the agent, or '' when there is none. */
async function lastLogLines(host: Host, serviceManager: ServiceManager): Promise<string> {
  const log = serviceManager.filesOf(AGENT_UNIT_NAME)[2];
  if (log === undefined) return '';
  const result = await host.exec(`tail -n 20 ${quote(log)}`, { sudo: true, readOnly: true }).catch(() => undefined);
  return result?.exitCode === 0 ? result.stdout.trim() : '';
}

async function undo(options: {
  host: Host;
  serviceManager: ServiceManager;
  written: Written[];
  isDataDirCreated: boolean;
  isUserCreated: boolean;
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
  if (options.isUserCreated) {
    // --force: the account is this run's own, and a process still counted
    // against its uid (this run's agent as it exits, or another process
    // namespace's) must not keep it on the host.
    await attempt(`remove the user ${TUNNEL_AGENT_USER}`, () =>
      execOrThrow(
        host,
        `userdel --force ${TUNNEL_AGENT_USER} && { ! getent group ${TUNNEL_AGENT_USER} >/dev/null || groupdel ${TUNNEL_AGENT_USER}; }`,
        { sudo: true },
      ),
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
