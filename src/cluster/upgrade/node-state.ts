/**
 * The state file of `upgrade node` on the node: the step reached, so that a
 * re-run after any interruption (a cut connection, a killed edgeadm, a
 * fleet run resumed) finishes the upgrade or the rollback, never backs up a
 * binary it has already replaced, and uncordons only a node it cordoned.
 * Kept beside `upgrade apply`'s (same directory, its own files): a node
 * has one or the other.
 *
 * Written whole and renamed into place before each step that changes the
 * host begins and after it ends.
 */
import { EdgeadmError } from '../../errors.js';
import { execOrThrow, type Host } from '../../hosts/host.js';
import { SYSTEM_TOOLS } from '../../hosts/system-tools.js';
import { isBackupHashes, type BackupHashes } from './backup-hashes.js';
import { UPGRADE_DIR } from './upgrade-state.js';

/** The state file. */
export const NODE_UPGRADE_STATE_FILE = `${UPGRADE_DIR}/node-state.json`;
/** The backup of the binaries and configuration being replaced. */
export const NODE_UPGRADE_BACKUP_DIR = `${UPGRADE_DIR}/node-backup`;

/**
 * The step reached, in order:
 * - `draining`: the Node is cordoned (by this upgrade unless `wasUnschedulable`); Pods are being evicted;
 * - `backed-up`: drained; the old binaries and configuration are backed up; the old ones still run;
 * - `swapped`: the new binaries are in place (some, if cut mid-swap: each is swapped atomically); being restarted and checked;
 * - `rolling-back`: the Ready gate failed; the backup is being restored;
 * - `done`: the new version runs, Ready; uncordoned;
 * - `rolled-back`: the old version runs again, Ready; uncordoned.
 */
export type NodeUpgradeStep = 'draining' | 'backed-up' | 'swapped' | 'rolling-back' | 'done' | 'rolled-back';

const STEPS: readonly NodeUpgradeStep[] = ['draining', 'backed-up', 'swapped', 'rolling-back', 'done', 'rolled-back'];

/** What the state file holds. */
export interface NodeUpgradeState {
  version: 1;
  step: NodeUpgradeStep;
  /** The kubelet version being replaced. */
  from: string;
  /** The package's version. */
  to: string;
  /** The package's name. */
  package: string;
  nodeName: string;
  /** Whether the Node was cordoned before this upgrade began (then it stays cordoned). */
  wasUnschedulable: boolean;
  /** Why a rollback began, when it did. */
  failure?: string;
  /** The SHA-256 of every file of the backup, recorded when it was taken, checked before a rollback restores it. */
  backupSha256?: BackupHashes;
}

/** Whether a run that finds this step has an upgrade (or a rollback) to finish. */
export function isNodeUpgradeUnfinished(step: NodeUpgradeStep): boolean {
  return step === 'draining' || step === 'backed-up' || step === 'swapped' || step === 'rolling-back';
}

/** Parses the state file; anything else is refused rather than guessed at. */
export function parseNodeUpgradeState(text: string, where: string): NodeUpgradeState {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw corrupt(where, (error as Error).message);
  }
  const v = value as Partial<NodeUpgradeState> | null;
  if (
    v === null ||
    typeof v !== 'object' ||
    v.version !== 1 ||
    !STEPS.includes(v.step as NodeUpgradeStep) ||
    typeof v.from !== 'string' ||
    typeof v.to !== 'string' ||
    typeof v.package !== 'string' ||
    typeof v.nodeName !== 'string' ||
    typeof v.wasUnschedulable !== 'boolean' ||
    (v.backupSha256 !== undefined && !isBackupHashes(v.backupSha256))
  ) {
    throw corrupt(where, 'not a node upgrade state edgeadm wrote');
  }
  return v as NodeUpgradeState;
}

function corrupt(where: string, why: string): EdgeadmError {
  return new EdgeadmError(`the node upgrade state ${where} cannot be read: ${why}`, {
    code: 'E_UPGRADE_STATE_INVALID',
    hints: [
      `Look at ${NODE_UPGRADE_BACKUP_DIR} (the old binaries) before removing ${NODE_UPGRADE_STATE_FILE} by hand.`,
    ],
  });
}

/** The node's upgrade state, or undefined when `upgrade node` never ran there. */
export async function readNodeUpgradeState(host: Host): Promise<NodeUpgradeState | undefined> {
  const result = await host.exec(`cat ${NODE_UPGRADE_STATE_FILE}`, { sudo: true, readOnly: true });
  if (result.exitCode !== 0 || result.dryRun === true) return undefined;
  return parseNodeUpgradeState(result.stdout, `${host.name}:${NODE_UPGRADE_STATE_FILE}`);
}

/** Writes the state (renamed into place by `put`, so a cut leaves the old state or the new one). */
export async function writeNodeUpgradeState(host: Host, state: NodeUpgradeState): Promise<void> {
  // chmod too: `mkdir -m` leaves the mode of a directory that exists alone.
  await execOrThrow(
    host,
    `${SYSTEM_TOOLS.mkdir} -p -m 700 ${UPGRADE_DIR} && ${SYSTEM_TOOLS.chmod} 700 ${UPGRADE_DIR}`,
    {
      sudo: true,
      description: `create ${UPGRADE_DIR} (0700)`,
    },
  );
  await host.put(Buffer.from(`${JSON.stringify(state, null, 2)}\n`), NODE_UPGRADE_STATE_FILE, {
    mode: 0o600,
    sudo: true,
    description: `record the node upgrade step "${state.step}" in ${NODE_UPGRADE_STATE_FILE}`,
  });
}
