/**
 * The upgrade state file on the host: the step an `upgrade apply` reached,
 * so that a re-run after any interruption (a cut connection, a killed
 * edgeadm) knows whether to finish the upgrade or to finish a rollback,
 * and never backs up a binary it has already replaced.
 *
 * It is written (whole, renamed into place by `put`) before each step that
 * changes the host begins and after it ends; the steps are ordered so that
 * the host is in one of two states at every point: the old version with
 * its datastore, or the new binary on that datastore.
 */
import { EdgeadmError } from '../../errors.js';
import { execOrThrow, type Host } from '../../hosts/host.js';
import { SYSTEM_TOOLS } from '../../hosts/system-tools.js';
import { isBackupHashes, type BackupHashes } from './backup-hashes.js';

/** Where `upgrade apply` keeps its state and backup on the host. */
export const UPGRADE_DIR = '/var/lib/edgeadm/upgrade';
/** The state file. */
export const UPGRADE_STATE_FILE = `${UPGRADE_DIR}/state.json`;
/** The backup of the version being replaced (the last upgrade's; the next one replaces it). */
export const UPGRADE_BACKUP_DIR = `${UPGRADE_DIR}/backup`;
/** The list of the backup's files with their SHA-256 (kept for older state files; the state file holds them too). */
export { BACKUP_MANIFEST } from './backup-hashes.js';

/**
 * The step reached, in order:
 * - `backing-up`: the service may be stopped; the old binary is in place; the backup is incomplete.
 * - `backed-up`: the backup is complete; the old or (if cut mid-swap) the new binary is in place.
 * - `swapped`: the new binary is in place; it is being started and checked.
 * - `rolling-back`: a gate failed; the backup is being restored.
 * - `done`: the new version runs and passed every gate.
 * - `rolled-back`: the old version runs again from the backup.
 */
export type UpgradeStep = 'backing-up' | 'backed-up' | 'swapped' | 'rolling-back' | 'done' | 'rolled-back';

const STEPS: readonly UpgradeStep[] = ['backing-up', 'backed-up', 'swapped', 'rolling-back', 'done', 'rolled-back'];

/** What the state file holds. */
export interface UpgradeState {
  version: 1;
  step: UpgradeStep;
  /** The version being replaced (the API server's, as read before the upgrade). */
  from: string;
  /** The package's version. */
  to: string;
  /** The package's name. */
  package: string;
  /** The Node of this control plane. */
  nodeName: string;
  /** Why a rollback began (the failed gate), when it did. */
  failure?: string;
  /**
   * Whether the host is one of several control planes: its rollback then
   * restores its binaries and configuration but not the datastore, which
   * its peers hold (one member's data restored alone would not rejoin them).
   */
  isHa?: boolean;
  /**
   * The SHA-256 of every file of the backup, recorded when it was taken. The
   * rollback checks the backup against these, kept here, outside the backup
   * directory, and not only against its MANIFEST.sha256 beside it.
   */
  backupSha256?: BackupHashes;
}

/** Whether a run that finds this step has an upgrade to finish (or a rollback). */
export function isUnfinished(step: UpgradeStep): boolean {
  return step === 'backing-up' || step === 'backed-up' || step === 'swapped' || step === 'rolling-back';
}

/** Parses the state file; anything else is refused rather than guessed at. */
export function parseUpgradeState(text: string, where: string): UpgradeState {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw corrupt(where, (error as Error).message);
  }
  const v = value as Partial<UpgradeState> | null;
  if (
    v === null ||
    typeof v !== 'object' ||
    v.version !== 1 ||
    !STEPS.includes(v.step as UpgradeStep) ||
    typeof v.from !== 'string' ||
    typeof v.to !== 'string' ||
    typeof v.package !== 'string' ||
    typeof v.nodeName !== 'string' ||
    (v.isHa !== undefined && typeof v.isHa !== 'boolean') ||
    (v.backupSha256 !== undefined && !isBackupHashes(v.backupSha256))
  ) {
    throw corrupt(where, 'not an upgrade state edgeadm wrote');
  }
  return v as UpgradeState;
}

function corrupt(where: string, why: string): EdgeadmError {
  return new EdgeadmError(`the upgrade state ${where} cannot be read: ${why}`, {
    code: 'E_UPGRADE_STATE_INVALID',
    hints: [
      `Look at ${UPGRADE_BACKUP_DIR} (the backup of the old version) before removing ${UPGRADE_STATE_FILE} by hand.`,
    ],
  });
}

/** The host's upgrade state, or undefined when no upgrade ever ran there. */
export async function readUpgradeState(host: Host): Promise<UpgradeState | undefined> {
  const result = await host.exec(`cat ${UPGRADE_STATE_FILE}`, { sudo: true, readOnly: true });
  if (result.exitCode !== 0 || result.dryRun === true) return undefined;
  return parseUpgradeState(result.stdout, `${host.name}:${UPGRADE_STATE_FILE}`);
}

/** Writes the state (renamed into place, so a cut leaves the old state or the new one). */
export async function writeUpgradeState(host: Host, state: UpgradeState): Promise<void> {
  // chmod too: `mkdir -m` leaves the mode of a directory that exists alone.
  await execOrThrow(
    host,
    `${SYSTEM_TOOLS.mkdir} -p -m 700 ${UPGRADE_DIR} && ${SYSTEM_TOOLS.chmod} 700 ${UPGRADE_DIR}`,
    {
      sudo: true,
      description: `create ${UPGRADE_DIR} (0700)`,
    },
  );
  await host.put(Buffer.from(`${JSON.stringify(state, null, 2)}\n`), UPGRADE_STATE_FILE, {
    mode: 0o600,
    sudo: true,
    description: `record the upgrade step "${state.step}" in ${UPGRADE_STATE_FILE}`,
  });
}
