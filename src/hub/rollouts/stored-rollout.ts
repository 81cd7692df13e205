/**
 * Reading one stored rollout back at the controller's start, so that no
 * stored document can stop the hub (issue #30): the current revision's
 * document and the clusters' reports are held to the hub's document limits
 * (document-limits.ts) before anything walks them, then parsed. A rollout
 * that fails any step is quarantined (the reason is kept, logged, counted
 * and shown in the rollout list), never fatal: the hub serves everyone
 * else, and its owner or an admin deletes it or applies a fixed revision.
 */
import { checkDocumentLimits } from '../http/document-limits.js';
import { HttpError } from '../http/http-replies.js';
import type { RolloutPrincipal } from './rollout-permissions.js';
import type { HubStore, ReportedCopyRecord, RolloutRecord } from '../store/store.js';
import { parseRollout, type RolloutSpec } from '../../rollout/spec.js';
import type { QuarantinedRollout } from '../../rollout/api.js';

/** A stored rollout read back whole. */
export interface LoadedRollout {
  ok: true;
  spec: RolloutSpec;
  document: unknown;
  reports: ReportedCopyRecord[];
}

/** Why a stored rollout was quarantined. */
export interface UnloadableRollout {
  ok: false;
  quarantine: QuarantinedRollout;
}

/**
 * Reads `record`'s current document and reports from `store`: a
 * {@link LoadedRollout}, or why it cannot be loaded. Never throws for what
 * the store holds (a store that cannot be read at all still throws).
 */
export async function loadStoredRollout(
  store: HubStore,
  record: RolloutRecord,
): Promise<LoadedRollout | UnloadableRollout> {
  const quarantined = (reason: string): UnloadableRollout => ({
    ok: false,
    quarantine: { name: record.name, revision: record.revision, owner: record.owner.user, reason },
  });
  try {
    const stored = await store.getRolloutRevision(record.name, record.revision);
    if (stored === undefined) return quarantined(`revision ${record.revision}'s document is missing from the store`);
    checkDocumentLimits(stored.document, `revision ${record.revision}'s document`);
    // Stored documents are read as they were taken: a field an older hub let through is no reason to quarantine.
    const spec = parseRollout(stored.document, { isStrict: false });
    const reports = await store.listReportedCopies(record.name);
    for (const report of reports) checkDocumentLimits(report, `the report of cluster ${report.cluster}`);
    return { ok: true, spec, document: stored.document, reports };
  } catch (error) {
    return quarantined((error as Error).message);
  }
}

/**
 * The rollouts quarantined at the controller's start: kept out of every
 * pass, listed to an admin and to their owner (others are not told they
 * exist), answered 409 to everything but their deletion.
 */
export class RolloutQuarantine {
  readonly #entries = new Map<string, { quarantine: QuarantinedRollout; record: RolloutRecord }>();

  add(record: RolloutRecord, quarantine: QuarantinedRollout): void {
    this.#entries.set(record.name, { quarantine, record });
  }

  /** How many there are (the hub's metric). */
  get size(): number {
    return this.#entries.size;
  }

  /** The stored record of a quarantined rollout (its progress says which clusters are owed a removal). */
  record(name: string): RolloutRecord | undefined {
    return this.#entries.get(name)?.record;
  }

  delete(name: string): void {
    this.#entries.delete(name);
  }

  /** The quarantined rollouts `actor` may see: all for an admin, their own for a user. */
  visible(actor: RolloutPrincipal): QuarantinedRollout[] {
    return [...this.#entries.values()]
      .map((entry) => entry.quarantine)
      .filter((quarantine) => actor.isAdmin || quarantine.owner === actor.user)
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /** Throws the answer to any request but a deletion for a quarantined rollout; returns for any other name. */
  refuse(name: string, actor: RolloutPrincipal): void {
    const entry = this.#entries.get(name);
    if (entry === undefined) return;
    if (!actor.isAdmin && entry.quarantine.owner !== actor.user) {
      throw new HttpError(404, 'E_ROLLOUT_NOT_FOUND', `no rollout named "${name}"`);
    }
    throw new HttpError(
      409,
      'E_ROLLOUT_QUARANTINED',
      `rollout "${name}" is quarantined: the hub could not load it at its start (${entry.quarantine.reason}); ` +
        `delete it ("edgeadm hub rollout delete ${name}") and apply a fixed document`,
    );
  }
}
