/**
 * What keeps an upgrade's backup from being swapped unseen (issue #40): the
 * backup is created private (files 0600, directories 0700 even when they
 * exist), the SHA-256 of each of its files is printed by the backup script
 * and kept in the upgrade's state file, outside the backup directory, and a
 * rollback checks the backup against those before it restores anything,
 * then restores each binary through the one install primitive with the
 * same hashes. Shared by `upgrade apply` (k3s, kubeadm) and `upgrade node`.
 */
import { EdgeadmError } from '../../errors.js';
import { execOrThrow, type Host } from '../../hosts/host.js';
import { SYSTEM_TOOLS, sha256OfFile } from '../../hosts/system-tools.js';
import type { VerifiedInstall } from '../verified-install.js';

/** The list of the backup's files with their SHA-256 (`sha256sum` format), inside the backup directory. */
export const BACKUP_MANIFEST = 'MANIFEST.sha256';

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** The SHA-256 of each file of a backup, by its path inside the backup directory. */
export type BackupHashes = Readonly<Record<string, string>>;

/**
 * The first lines of every backup script: files it creates are 0600 (the
 * archives hold keys and tokens) and the directories 0700 even when they
 * exist already (`mkdir -m` leaves an existing directory's mode alone).
 */
export function privateBackupDirScript(dirs: readonly string[]): string {
  return [
    'umask 077',
    `${SYSTEM_TOOLS.mkdir} -p -m 700 ${dirs.map(shellQuote).join(' ')}`,
    `${SYSTEM_TOOLS.chmod} 700 ${dirs.map(shellQuote).join(' ')}`,
  ].join('\n');
}

/** What a backup script prints before its hash list, so that the list can be found in its output. */
export const BACKUP_HASHES_MARK = 'edgeadm-backup-sha256:';

/**
 * Lines that write the backup's hash list (`sha256sum` format) as
 * MANIFEST.sha256 and print it, for the state file: `files` are paths
 * inside `dir` (shell words, globs allowed).
 */
export function backupHashesScript(dir: string, files: string): string {
  return [
    `(cd ${shellQuote(dir)} && ${SYSTEM_TOOLS.sha256sum} ${files} > ${BACKUP_MANIFEST})`,
    `echo '${BACKUP_HASHES_MARK}'`,
    `${SYSTEM_TOOLS.cat} ${shellQuote(`${dir}/${BACKUP_MANIFEST}`)}`,
  ].join('\n');
}

/** The hashes a backup script printed after {@link BACKUP_HASHES_MARK}. */
export function parseBackupHashes(stdout: string): Record<string, string> {
  const at = stdout.indexOf(BACKUP_HASHES_MARK);
  return at < 0 ? {} : parseSha256List(stdout.slice(at + BACKUP_HASHES_MARK.length));
}

/** A `sha256sum` listing as path → SHA-256. */
function parseSha256List(text: string): Record<string, string> {
  const hashes: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
    if (match) hashes[match[2]!] = match[1]!;
  }
  return hashes;
}

/**
 * The hashes to restore a backup with: those the state file recorded, or,
 * for an upgrade an older edgeadm began (none recorded), the backup's own
 * MANIFEST.sha256, which {@link checkBackup} has verified the backup against.
 */
export async function restoreHashes(
  host: Host,
  dir: string,
  recorded: BackupHashes | undefined,
): Promise<BackupHashes> {
  if (recorded !== undefined) return recorded;
  const listed = await execOrThrow(host, `${SYSTEM_TOOLS.cat} ${shellQuote(`${dir}/${BACKUP_MANIFEST}`)}`, {
    sudo: true,
    readOnly: true,
    description: `read ${dir}/${BACKUP_MANIFEST}`,
  });
  return parseSha256List(listed.stdout);
}

/** Whether `value` is a list of backup hashes as the state files keep them. */
export function isBackupHashes(value: unknown): value is BackupHashes {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.entries(value).every(([path, sha]) => path !== '' && typeof sha === 'string' && /^[0-9a-f]{64}$/.test(sha))
  );
}

/**
 * Checks a backup before a rollback restores it: every file against the
 * hashes kept in the state file, outside the backup directory, so that a
 * changed backup cannot pass with a manifest changed beside it. A state
 * written by an older edgeadm has none, and the backup's own MANIFEST.sha256
 * is the check, as it was.
 *
 * @throws {EdgeadmError} `E_UPGRADE_BACKUP_MISMATCH` naming the files that differ.
 */
export async function checkBackup(host: Host, dir: string, hashes: BackupHashes | undefined): Promise<void> {
  const entries = Object.entries(hashes ?? {});
  const script =
    entries.length === 0
      ? `cd ${shellQuote(dir)} && ${SYSTEM_TOOLS.sha256sum} -c --quiet ${BACKUP_MANIFEST} >&2 || echo 'edgeadm-backup: differs ${BACKUP_MANIFEST}'`
      : entries
          .map(
            ([path, sha256]) =>
              `if [ "$(${sha256OfFile(shellQuote(`${dir}/${path}`))} 2>/dev/null)" != ${sha256} ]; then echo ${shellQuote(`edgeadm-backup: differs ${path}`)}; fi`,
          )
          .join('\n');
  const result = await execOrThrow(host, script, {
    sudo: true,
    readOnly: true,
    description: `check ${dir} against the hashes recorded when it was taken`,
  });
  const differing = result.stdout
    .split('\n')
    .filter((line) => line.startsWith('edgeadm-backup: differs '))
    .map((line) => line.slice('edgeadm-backup: differs '.length));
  if (differing.length > 0) {
    throw new EdgeadmError(
      `the backup in ${dir} on ${host.name} is not what was backed up: ${differing.join(', ')} changed since; nothing was restored`,
      {
        code: 'E_UPGRADE_BACKUP_MISMATCH',
        hints: [
          `Look at ${dir} and at who can write there before restoring anything by hand; the host runs whatever binaries it has now.`,
        ],
        details: { host: host.name, dir, differing },
      },
    );
  }
}

/** The install of a backed-up file, checked against the hash the state file recorded for it. */
export function backupRestoreInstall(
  dir: string,
  name: string,
  target: string,
  mode: number,
  hashes: BackupHashes,
): VerifiedInstall | undefined {
  const sha256 = hashes[name];
  if (sha256 === undefined) return undefined;
  return { source: `${dir}/${name}`, target, mode, sha256, what: `${name} of the backup ${dir}` };
}
