/**
 * TEST TOOL, not systemd: runs a command the way a unit's sandbox would
 * confine it, for hosts without a running systemd (this machine, CI). It
 * applies the unit's `SystemCallFilter=` allow-list (expanded by the real
 * `systemd-analyze syscall-filter`), `MemoryDenyWriteExecute=`,
 * `RestrictAddressFamilies=`, `NoNewPrivileges=` and an empty capability
 * bounding set, and the unit's `Environment=`; it does not apply the file system, namespace or cgroup
 * settings. What passes here can still fail under systemd for those.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../cli.js';

/** Why the sandbox cannot be built here, or undefined when it can. */
export function sandboxUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root (an empty capability bounding set needs CAP_SETPCAP)';
  for (const tool of ['/usr/bin/gcc', '/usr/bin/setpriv', '/usr/bin/systemd-analyze']) {
    if (!existsSync(tool)) return `${tool} is missing`;
  }
  return undefined;
}

/** Compiles the seccomp runner; returns its path. */
export function buildSeccompRun(): string {
  const out = join(mkdtempSync(join(tmpdir(), 'seccomp-run-')), 'seccomp-run');
  const build = spawnSync(
    'gcc',
    ['-O1', '-o', out, join(REPO_ROOT, 'test/support/unit-sandbox/seccomp-run.c'), '-l:libseccomp.so.2'],
    { encoding: 'utf8' },
  );
  if (build.status !== 0) throw new Error(`cannot build seccomp-run: ${build.stderr}`);
  return out;
}

/** The system calls of a group (`@system-service`), its nested groups expanded, as systemd lists them. */
function expandGroup(group: string, seen = new Set<string>()): Set<string> {
  const names = new Set<string>();
  if (seen.has(group)) return names;
  seen.add(group);
  const listed = spawnSync('systemd-analyze', ['syscall-filter', '--no-pager', group], { encoding: 'utf8' });
  if (listed.status !== 0) throw new Error(`systemd-analyze syscall-filter ${group}: ${listed.stderr}`);
  for (const line of listed.stdout.split('\n').slice(1)) {
    const name = line.trim();
    if (name === '' || name.startsWith('#')) continue;
    for (const found of name.startsWith('@') ? expandGroup(name, seen) : [name]) names.add(found);
  }
  return names;
}

/**
 * The allow-list a unit's `SystemCallFilter=` lines make, as systemd reads
 * them: the first line without `~` starts the list, each `~` line removes.
 */
export function syscallAllowList(unitText: string): string[] {
  let allowed: Set<string> | undefined;
  for (const line of unitText.split('\n')) {
    if (!line.startsWith('SystemCallFilter=')) continue;
    const value = line.slice('SystemCallFilter='.length).trim();
    const isDeny = value.startsWith('~');
    const names = new Set<string>();
    for (const item of value.replace(/^~/, '').split(/\s+/).filter(Boolean)) {
      for (const name of item.startsWith('@') ? expandGroup(item) : [item]) names.add(name);
    }
    if (isDeny) {
      if (allowed === undefined) throw new Error('a deny-list unit is not supported by this tool');
      for (const name of names) allowed.delete(name);
    } else {
      allowed = new Set([...(allowed ?? []), ...names]);
    }
  }
  if (allowed === undefined) throw new Error('the unit has no SystemCallFilter=');
  return [...allowed].sort();
}

/** The unit's `Environment=` assignments, split and unquoted as systemd does for the forms edgeadm writes. */
export function unitEnvironment(unitText: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of unitText.split('\n')) {
    if (!line.startsWith('Environment=')) continue;
    for (const match of line.slice('Environment='.length).matchAll(/"([^"]*)"|(\S+)/g)) {
      const word = match[1] ?? match[2]!;
      const equals = word.indexOf('=');
      // systemd ignores a word that is not an assignment (with a warning).
      if (equals > 0) env[word.slice(0, equals)] = word.slice(equals + 1);
    }
  }
  return env;
}

/** Linux address family numbers of the names edgeadm's units use. */
const ADDRESS_FAMILIES: Record<string, number> = {
  AF_UNIX: 1,
  AF_INET: 2,
  AF_INET6: 10,
  AF_NETLINK: 16,
  AF_PACKET: 17,
};

/** The unit's `RestrictAddressFamilies=` allow-list as family numbers, or undefined when it sets none. */
export function addressFamilies(unitText: string): number[] | undefined {
  const line = unitText.split('\n').find((l) => l.startsWith('RestrictAddressFamilies='));
  if (line === undefined) return undefined;
  const names = line.slice('RestrictAddressFamilies='.length).trim().split(/\s+/);
  if (names[0]?.startsWith('~')) throw new Error('a deny-list RestrictAddressFamilies= is not supported by this tool');
  return names.map((name) => {
    const family = ADDRESS_FAMILIES[name];
    if (family === undefined) throw new Error(`unknown address family ${name}`);
    return family;
  });
}

/** The command line that runs `command` confined as the unit says (see the module comment). */
export function sandboxed(options: {
  seccompRun: string;
  unitText: string;
  command: string[];
  /** Deny action for calls outside the list: systemd kills unless SystemCallErrorNumber= is set. */
  onRefused: 'kill' | 'eperm';
}): { file: string; args: string[]; env: Record<string, string> } {
  const list = join(mkdtempSync(join(tmpdir(), 'syscalls-')), 'allowed');
  writeFileSync(list, `${syscallAllowList(options.unitText).join('\n')}\n`);
  const isMdwe = /^MemoryDenyWriteExecute=yes$/m.test(options.unitText);
  const families = addressFamilies(options.unitText);
  return {
    file: 'setpriv',
    args: [
      '--bounding-set=-all',
      '--inh-caps=-all',
      '--no-new-privs',
      '--',
      options.seccompRun,
      list,
      options.onRefused,
      isMdwe ? 'mdwe' : 'nomdwe',
      families === undefined ? '-' : families.join(','),
      ...options.command,
    ],
    env: unitEnvironment(options.unitText),
  };
}
