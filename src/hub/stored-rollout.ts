/**
 * Reading one stored rollout back at the controller's start, so that no
 * stored document can stop the hub (issue #30): the current revision's
 * document and the clusters' reports are held to the hub's document limits
 * (document-limits.ts) before anything walks them, then parsed. A rollout
 * that fails any step is quarantined (the reason is kept, logged, counted
 * and shown in the rollout list), never fatal: the hub serves everyone
 * else, and its owner or an admin deletes it or applies a fixed revision.
 */
import { checkDocumentLimits } from './document-limits.js';
import type { HubStore, ReportedCopyRecord, RolloutRecord } from './store.js';
import { parseRollout, type RolloutSpec } from '../rollout/spec.js';
import type { QuarantinedRollout } from '../rollout/api.js';

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
