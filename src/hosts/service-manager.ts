/**
 * Service managers: how a distribution's long-running service (k3s server
 * or agent) is installed, started, stopped and removed on a host.
 *
 * - `systemd` (real hosts): the unit goes to /etc/systemd/system, then
 *   `systemctl daemon-reload` and `enable --now` (or `restart` when the
 *   unit or its configuration changed).
 * - `direct`: for hosts without systemd, such as the test hosts of the
 *   integration suite (network namespaces whose PID 1 is not systemd). It is
 *   never chosen silently: the operator (or the test harness) asks for it
 *   with {@link SERVICE_MANAGER_ENV}`=direct`. The unit file is still
 *   written, merged with its drop-ins as systemd merges them
 *   (`ExecStart=`, `Environment=`, `EnvironmentFile=`, `User=`/`Group=`,
 *   `Restart=`: ./direct-unit.ts), and started detached (`setsid nohup`) by a
 *   small launcher script, with a pid file and a log under
 *   {@link DIRECT_SERVICE_DIR}. The launcher starts the service again when
 *   the unit says `Restart=`; nothing starts it after the host reboots, and
 *   the unit's sandboxing is not applied.
 */
import { EdgeadmError, PreflightError } from '../errors.js';
import { effectiveUnitOf, renderDirectLauncher } from './direct-unit.js';
import { execOrThrow, type Host } from './host.js';

/** The environment variable that selects the service manager. */
export const SERVICE_MANAGER_ENV = 'EDGEADM_SERVICE_MANAGER';
/** Where systemd units are written. */
export const SYSTEMD_UNIT_DIR = '/etc/systemd/system';
/** Pid files and logs of services started by the direct service manager. */
export const DIRECT_SERVICE_DIR = '/var/lib/edgeadm/services';
/** How long a stopped service may take to exit before it is killed. */
export const SERVICE_STOP_TIMEOUT_SECONDS = 10;
/** How long a systemctl call may take. */
export const SYSTEMCTL_TIMEOUT_MS = 120_000;

export type ServiceManagerKind = 'systemd' | 'direct';

/** A systemd drop-in of a unit (`<unit>.d/<name>`). */
export interface ServiceDropIn {
  /** `10-kubeadm.conf`. */
  name: string;
  content: string;
}

/** A service as a distribution describes it. */
export interface ServiceUnit {
  /** `k3s.service`. */
  name: string;
  /** The unit file's text. */
  content: string;
  /**
   * Drop-ins written beside the unit. The direct service manager writes them
   * too, for review, but starts the unit's own `ExecStart`.
   */
  dropIns?: readonly ServiceDropIn[];
}

/** Where a unit's drop-in lives. */
export function dropInPath(unitName: string, dropInName: string): string {
  return `${SYSTEMD_UNIT_DIR}/${unitName}.d/${dropInName}`;
}

/** Every file a manager writes for a unit, its drop-ins included (for the install state). */
export function serviceFilesOf(manager: ServiceManager, unit: ServiceUnit): string[] {
  return [...manager.filesOf(unit.name), ...(unit.dropIns ?? []).map((d) => dropInPath(unit.name, d.name))];
}

/** Writes a unit's drop-ins; true when one changed. */
async function writeDropIns(host: Host, unit: ServiceUnit): Promise<boolean> {
  let isChanged = false;
  for (const dropIn of unit.dropIns ?? []) {
    const path = dropInPath(unit.name, dropIn.name);
    const result = await host.put(Buffer.from(dropIn.content), path, {
      mode: 0o644,
      sudo: true,
      description: `write the systemd drop-in ${path}`,
    });
    if (!result.skipped) isChanged = true;
  }
  return isChanged;
}

/** What {@link ServiceManager.ensureRunning} did. */
export type StartOutcome = 'started' | 'restarted' | 'already-running';

/** One way of running services on a host. */
export interface ServiceManager {
  readonly kind: ServiceManagerKind;
  /** The files the manager writes for a unit (for the install state). */
  filesOf(unitName: string): string[];
  /** Writes the unit file; true when it changed. */
  install(host: Host, unit: ServiceUnit): Promise<boolean>;
  /** Starts the service, or restarts it when `isRestartNeeded` (its configuration changed). */
  ensureRunning(host: Host, unit: ServiceUnit, options: { isRestartNeeded: boolean }): Promise<StartOutcome>;
  isActive(host: Host, unitName: string): Promise<boolean>;
  /** Stops and disables the service; a missing service is fine. */
  stop(host: Host, unitName: string): Promise<void>;
}

/**
 * The environment a unit's `Environment=` lines give its service, as
 * systemd reads them (systemd.exec(5)): each line holds space-separated
 * `NAME=value` assignments, an assignment in double or single quotes may
 * hold spaces, a later assignment of a name wins, and an empty
 * `Environment=` resets the list. Backslash escapes are not understood
 * (edgeadm's units use none). Pure.
 */
export function environmentOf(unitText: string): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const line of unitText.split('\n')) {
    if (!line.startsWith('Environment=')) continue;
    const value = line.slice('Environment='.length).trim();
    if (value === '') {
      for (const name of Object.keys(environment)) delete environment[name];
      continue;
    }
    for (const match of value.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) {
      const assignment = match[1] ?? match[2] ?? match[3] ?? '';
      const equals = assignment.indexOf('=');
      if (equals > 0) environment[assignment.slice(0, equals)] = assignment.slice(equals + 1);
    }
  }
  return environment;
}

function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** systemd on a real host. */
export class SystemdServiceManager implements ServiceManager {
  readonly kind = 'systemd';

  filesOf(unitName: string): string[] {
    return [`${SYSTEMD_UNIT_DIR}/${unitName}`];
  }

  async install(host: Host, unit: ServiceUnit): Promise<boolean> {
    const result = await host.put(Buffer.from(unit.content), `${SYSTEMD_UNIT_DIR}/${unit.name}`, {
      mode: 0o644,
      sudo: true,
      description: `write the systemd unit ${SYSTEMD_UNIT_DIR}/${unit.name}`,
    });
    const isDropInChanged = await writeDropIns(host, unit);
    if (!result.skipped || isDropInChanged) {
      await execOrThrow(host, 'systemctl daemon-reload', {
        sudo: true,
        timeoutMs: SYSTEMCTL_TIMEOUT_MS,
        description: 'reload systemd units (systemctl daemon-reload)',
      });
    }
    return !result.skipped || isDropInChanged;
  }

  async ensureRunning(host: Host, unit: ServiceUnit, options: { isRestartNeeded: boolean }): Promise<StartOutcome> {
    const isActive = await this.isActive(host, unit.name);
    if (isActive && !options.isRestartNeeded) return 'already-running';
    const verb = isActive ? 'restart' : 'enable --now';
    await execOrThrow(host, `systemctl ${verb} ${quote(unit.name)}`, {
      sudo: true,
      timeoutMs: SYSTEMCTL_TIMEOUT_MS,
      description: `${isActive ? 'restart' : 'enable and start'} ${unit.name} (systemctl ${verb})`,
    });
    return isActive ? 'restarted' : 'started';
  }

  async isActive(host: Host, unitName: string): Promise<boolean> {
    const result = await host.exec(`systemctl is-active --quiet ${quote(unitName)}`, { sudo: true, readOnly: true });
    return result.exitCode === 0 && result.dryRun !== true;
  }

  async stop(host: Host, unitName: string): Promise<void> {
    await execOrThrow(host, `systemctl disable --now ${quote(unitName)} 2>/dev/null || true`, {
      sudo: true,
      timeoutMs: SYSTEMCTL_TIMEOUT_MS,
      description: `stop and disable ${unitName} (systemctl disable --now)`,
    });
  }
}

/** Detached processes with pid files, for hosts without systemd (see the module comment). */
export class DirectServiceManager implements ServiceManager {
  readonly kind = 'direct';

  filesOf(unitName: string): string[] {
    return [
      `${SYSTEMD_UNIT_DIR}/${unitName}`,
      this.#pidFile(unitName),
      this.#logFile(unitName),
      this.#launcherFile(unitName),
      this.#mainPidFile(unitName),
    ];
  }

  /** The running service's own pid (the launcher's child), absent while it is down. */
  #mainPidFile(unitName: string): string {
    return `${DIRECT_SERVICE_DIR}/${unitName}.main.pid`;
  }

  #launcherFile(unitName: string): string {
    return `${DIRECT_SERVICE_DIR}/${unitName}.sh`;
  }

  #pidFile(unitName: string): string {
    return `${DIRECT_SERVICE_DIR}/${unitName}.pid`;
  }

  #logFile(unitName: string): string {
    return `${DIRECT_SERVICE_DIR}/${unitName}.log`;
  }

  async install(host: Host, unit: ServiceUnit): Promise<boolean> {
    const result = await host.put(Buffer.from(unit.content), `${SYSTEMD_UNIT_DIR}/${unit.name}`, {
      mode: 0o644,
      sudo: true,
      description: `write the unit ${SYSTEMD_UNIT_DIR}/${unit.name} (started directly: ${SERVICE_MANAGER_ENV}=direct)`,
    });
    const isDropInChanged = await writeDropIns(host, unit);
    return !result.skipped || isDropInChanged;
  }

  async ensureRunning(host: Host, unit: ServiceUnit, options: { isRestartNeeded: boolean }): Promise<StartOutcome> {
    const isActive = await this.isActive(host, unit.name);
    if (isActive && !options.isRestartNeeded) return 'already-running';
    const effective = effectiveUnitOf(unit);
    // Also when not active: a launcher may be waiting to start a failing service again.
    await this.stop(host, unit.name);
    const launcher = this.#launcherFile(unit.name);
    await host.put(Buffer.from(renderDirectLauncher(unit.name, effective, this.#mainPidFile(unit.name))), launcher, {
      mode: 0o700,
      sudo: true,
      description: `write the launcher of ${unit.name} (its unit and drop-ins, started without systemd)`,
    });
    const pidFile = this.#pidFile(unit.name);
    // setsid: a session of its own, so the SSH session ending does not take it along;
    // every descriptor is redirected so the channel can close.
    await execOrThrow(
      host,
      [
        `mkdir -p ${DIRECT_SERVICE_DIR}`,
        `setsid nohup /bin/sh ${quote(launcher)} </dev/null >>${quote(this.#logFile(unit.name))} 2>&1 &`,
        `echo $! > ${quote(pidFile)}`,
      ].join('\n'),
      { sudo: true, description: `start ${unit.name} directly, without systemd: ${effective.execStart}` },
    );
    return isActive ? 'restarted' : 'started';
  }

  /** The launcher runs and so does the service (not a launcher between two starts of a failing service). */
  async isActive(host: Host, unitName: string): Promise<boolean> {
    const pidFile = quote(this.#pidFile(unitName));
    const mainPidFile = quote(this.#mainPidFile(unitName));
    const isRunning = (file: string): string => `[ -f ${file} ] && kill -0 "$(cat ${file})" 2>/dev/null`;
    const result = await host.exec(`${isRunning(pidFile)} && ${isRunning(mainPidFile)}`, {
      sudo: true,
      readOnly: true,
    });
    return result.exitCode === 0 && result.dryRun !== true;
  }

  async stop(host: Host, unitName: string): Promise<void> {
    const pidFile = quote(this.#pidFile(unitName));
    // The launcher leads its own process group (setsid), with the service in it: the group is signalled,
    // and waited for as a whole, so that the service's own graceful stop gets its time.
    const script = [
      `[ -f ${pidFile} ] || exit 0`,
      `pid=$(cat ${pidFile})`,
      // `kill -TERM -- -PID` is refused by dash's kill ("Illegal number: -"), which left the group running.
      'kill -TERM "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true',
      'i=0',
      `while { kill -0 "-$pid" || kill -0 "$pid"; } 2>/dev/null && [ $i -lt ${SERVICE_STOP_TIMEOUT_SECONDS * 10} ]; do sleep 0.1; i=$((i+1)); done`,
      'kill -KILL "-$pid" 2>/dev/null || true',
      `rm -f ${pidFile} ${quote(this.#mainPidFile(unitName))}`,
    ].join('\n');
    await execOrThrow(host, script, {
      sudo: true,
      description: `stop ${unitName} (pid file ${this.#pidFile(unitName)})`,
    });
  }
}

/**
 * The service manager for a host: the one asked for, else systemd when the
 * host runs it. A host without systemd is an error unless `direct` was asked
 * for explicitly.
 *
 * @throws {PreflightError} `E_NO_SYSTEMD`.
 */
export function selectServiceManager(options: {
  requested: ServiceManagerKind | undefined;
  initSystem: string;
  hostName: string;
}): ServiceManager {
  if (options.requested === 'direct') return new DirectServiceManager();
  if (options.requested === 'systemd' || options.initSystem === 'systemd') return new SystemdServiceManager();
  throw new PreflightError(
    `${options.hostName} does not run systemd (its init system is ${options.initSystem}); edgeadm installs services as systemd units`,
    {
      code: 'E_NO_SYSTEMD',
      hints: [
        `On hosts without systemd (containers, test namespaces) set ${SERVICE_MANAGER_ENV}=direct: the unit and its drop-ins are then run by a launcher script with a pid file (Restart= honoured; nothing starts it after a reboot).`,
      ],
    },
  );
}

/** Reads {@link SERVICE_MANAGER_ENV}. */
export function requestedServiceManager(env: NodeJS.ProcessEnv): ServiceManagerKind | undefined {
  const value = env[SERVICE_MANAGER_ENV];
  if (value === undefined || value === '') return undefined;
  if (value === 'systemd' || value === 'direct') return value;
  throw new EdgeadmError(`${SERVICE_MANAGER_ENV} must be "systemd" or "direct", not ${JSON.stringify(value)}`, {
    code: 'E_SERVICE_MANAGER_INVALID',
    exitCode: 3,
  });
}
