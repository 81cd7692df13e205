/**
 * What the direct service manager (hosts without systemd) reads of a unit:
 * the unit and its drop-ins merged as systemd merges them, and the small
 * shell launcher that runs the result. Pure: no I/O.
 *
 * systemd.unit(5) and systemd.exec(5) rules honoured, because real services
 * depend on them:
 * - drop-ins apply after the unit, in name order; an empty `ExecStart=` or
 *   `Environment=` resets what came before (kubeadm's 10-kubeadm.conf
 *   replaces the kubelet's `ExecStart=` this way, and edgeadm's edge drop-in
 *   sets `KUBELET_KUBECONFIG_ARGS` again);
 * - `EnvironmentFile=` is read at every start, after `Environment=`, and a
 *   leading `-` makes a missing file fine (kubeadm writes
 *   /var/lib/kubelet/kubeadm-flags.env after the kubelet was first started);
 * - `$NAME` in `ExecStart=` splits into words, as systemd's does;
 * - `Restart=always|on-failure` with `RestartSec=`: the service is started
 *   again when it exits (a packaged kubelet exits until kubeadm has written
 *   its configuration, and systemd starts it again);
 * - `User=` and `Group=` (with setpriv).
 *
 * What is not applied: the sandboxing settings, `ExecStartPre=`, resource
 * limits, `Type=notify` readiness. The launcher is for hosts where the
 * operator asked for `EDGEADM_SERVICE_MANAGER=direct` (containers, test
 * namespaces), and says so at its top.
 */
import { EdgeadmError } from '../errors.js';

/** A unit file and its drop-ins, as a distribution describes a service. */
export interface UnitSources {
  name: string;
  content: string;
  dropIns?: ReadonlyArray<{ name: string; content: string }>;
}

/** An environment file a unit names. */
export interface UnitEnvironmentFile {
  path: string;
  /** A leading `-`: a missing file is fine. */
  isOptional: boolean;
}

/** When the service is started again after it exits. */
export type UnitRestart = 'no' | 'always' | 'on-failure';

/** The settings of a unit and its drop-ins that the direct service manager applies. */
export interface EffectiveUnit {
  execStart: string;
  /** `Environment=` assignments, in the order systemd applies them (later wins). */
  environment: Record<string, string>;
  environmentFiles: UnitEnvironmentFile[];
  user?: string;
  group?: string;
  restart: UnitRestart;
  /** Seconds between an exit and the next start. */
  restartSeconds: number;
}

/** systemd's default `RestartSec=` (100 ms). */
const DEFAULT_RESTART_SECONDS = 0.1;

/** The `[Service]` lines of one file, continuation lines joined, comments dropped. */
function serviceLines(text: string): Array<{ key: string; value: string }> {
  const joined = text.replace(/[ \t]*\\\n\s*/g, ' ');
  const lines: Array<{ key: string; value: string }> = [];
  let section = '';
  for (const raw of joined.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    if (line.startsWith('[')) {
      section = line;
      continue;
    }
    if (section !== '[Service]') continue;
    const equals = line.indexOf('=');
    if (equals <= 0) continue;
    lines.push({ key: line.slice(0, equals).trim(), value: line.slice(equals + 1).trim() });
  }
  return lines;
}

/** `NAME=value` assignments of one `Environment=` value (quoted ones may hold spaces). */
function assignmentsOf(value: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const match of value.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) {
    const assignment = match[1] ?? match[2] ?? match[3] ?? '';
    const equals = assignment.indexOf('=');
    if (equals > 0) out.push([assignment.slice(0, equals), assignment.slice(equals + 1)]);
  }
  return out;
}

/** Seconds from a `RestartSec=` value (`10`, `10s`, `500ms`, `1min`). */
function secondsOf(value: string, unitName: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|sec|min)?$/.exec(value);
  if (!match) {
    throw new EdgeadmError(
      `${unitName}: RestartSec=${value} is not a duration edgeadm understands (10, 10s, 500ms, 1min)`,
      {
        code: 'E_SERVICE_UNIT_INVALID',
      },
    );
  }
  const amount = Number(match[1]);
  const unit = match[2] ?? 's';
  return unit === 'ms' ? amount / 1000 : unit === 'min' ? amount * 60 : amount;
}

/**
 * The unit with its drop-ins applied in name order, as systemd reads them.
 *
 * @throws {EdgeadmError} `E_SERVICE_UNIT_INVALID` without an `ExecStart=`
 * or with a `Restart=`/`RestartSec=` value edgeadm does not understand.
 */
export function effectiveUnitOf(unit: UnitSources): EffectiveUnit {
  const dropIns = [...(unit.dropIns ?? [])].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let execStart: string | undefined;
  let environment: Record<string, string> = {};
  let environmentFiles: UnitEnvironmentFile[] = [];
  let user: string | undefined;
  let group: string | undefined;
  let restart: UnitRestart = 'no';
  let restartSeconds = DEFAULT_RESTART_SECONDS;
  for (const text of [unit.content, ...dropIns.map((d) => d.content)]) {
    for (const { key, value } of serviceLines(text)) {
      switch (key) {
        case 'ExecStart':
          execStart = value === '' ? undefined : value;
          break;
        case 'Environment':
          if (value === '') environment = {};
          else for (const [name, v] of assignmentsOf(value)) environment[name] = v;
          break;
        case 'EnvironmentFile':
          if (value === '') environmentFiles = [];
          else
            environmentFiles.push(
              value.startsWith('-') ? { path: value.slice(1), isOptional: true } : { path: value, isOptional: false },
            );
          break;
        case 'User':
          user = value || undefined;
          break;
        case 'Group':
          group = value || undefined;
          break;
        case 'Restart':
          if (value === 'always' || value === 'on-failure' || value === 'no') restart = value;
          else
            throw new EdgeadmError(`${unit.name}: Restart=${value} is not one of no, always, on-failure`, {
              code: 'E_SERVICE_UNIT_INVALID',
            });
          break;
        case 'RestartSec':
          restartSeconds = secondsOf(value, unit.name);
          break;
        default:
          break;
      }
    }
  }
  if (execStart === undefined) {
    throw new EdgeadmError(`${unit.name} has no ExecStart= line`, { code: 'E_SERVICE_UNIT_INVALID' });
  }
  return {
    execStart,
    environment,
    environmentFiles,
    ...(user === undefined ? {} : { user, group: group ?? user }),
    restart,
    restartSeconds,
  };
}

function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * The shell script that runs an effective unit: its environment, its
 * environment files read at every start, its command as its user, started
 * again after it exits as `Restart=` says. The script is the service's
 * process group leader, so stopping the group stops both. With
 * `mainPidFile`, the running service's own pid is kept there (and removed
 * while it is down), as systemd's MainPID: "active" means the service runs,
 * not merely its launcher waiting to start it again.
 */
export function renderDirectLauncher(unitName: string, unit: EffectiveUnit, mainPidFile?: string): string {
  const command =
    unit.user === undefined
      ? unit.execStart
      : `setpriv --reuid=${quote(unit.user)} --regid=${quote(unit.group ?? unit.user)} --init-groups -- ${unit.execStart}`;
  const run = [
    'run_service() {',
    '  (',
    ...Object.entries(unit.environment).map(([name, value]) => `    export ${name}=${quote(value)}`),
    ...unit.environmentFiles.map((file) =>
      file.isOptional
        ? `    if [ -r ${quote(file.path)} ]; then set -a; . ${quote(file.path)}; set +a; fi`
        : `    set -a; . ${quote(file.path)} || exit 1; set +a`,
    ),
    `    exec ${command}`,
    '  ) &',
    '  main=$!',
    ...(mainPidFile ? [`  echo "$main" > ${quote(mainPidFile)}`] : []),
    '  wait "$main"',
    '  status=$?',
    ...(mainPidFile ? [`  rm -f ${quote(mainPidFile)}`] : []),
    '  return "$status"',
    '}',
  ];
  const header = [
    '#!/bin/sh',
    `# ${unitName}, started by edgeadm's direct service manager (EDGEADM_SERVICE_MANAGER=direct): the unit and`,
    '# its drop-ins as systemd would merge them, without systemd. Written at every start; edgeadm reset removes it.',
    ...run,
  ];
  if (unit.restart === 'no') return [...header, 'run_service', ''].join('\n');
  return [
    ...header,
    'while :; do',
    '  run_service',
    '  status=$?',
    ...(unit.restart === 'on-failure' ? ['  if [ "$status" -eq 0 ]; then exit 0; fi'] : []),
    `  echo "${unitName} exited ($status); starting it again in ${unit.restartSeconds} s (Restart=${unit.restart})" >&2`,
    `  sleep ${unit.restartSeconds}`,
    'done',
    '',
  ].join('\n');
}
