/**
 * What travels between the hub and a cluster's agent for rollouts: the
 * contract both ends build on. Delivery is agent-side apply: the hub sends
 * each cluster its rendered copy once, on a control stream of the tunnel
 * the agent already holds open; the agent applies it to its own API server
 * (as the rollout's owner, impersonated), watches it become ready, and
 * reports back on one long-lived report stream per tunnel. The hub never
 * polls a cluster: its work per cluster is one copy out and a report per
 * change in, which is what keeps the hub's CPU per cluster flat at 10,000
 * clusters (measured in bench/rollout against pushing every object
 * through the kube path).
 *
 * Control streams carry no identity headers (see tunnel/protocol.ts), so a
 * user's stream can never reach these paths.
 */
import type { RenderedCopy } from './render.js';
import type { CopyReport } from './progress.js';

/** Hub to agent: apply this copy (`POST`, JSON {@link CopyMessage}); answered 202 once stored. */
export const ROLLOUT_APPLY_PATH = '/.edgeadm/rollout/apply';
/** Hub to agent: remove a rollout's objects (`POST`, JSON {@link RemoveMessage}); answered 202. */
export const ROLLOUT_REMOVE_PATH = '/.edgeadm/rollout/remove';
/**
 * Hub to agent: `GET`, opened once after the welcome; the agent answers 200
 * and writes one JSON {@link ReportMessage} per line whenever a copy's
 * readiness or reported status changes, first one line per copy it runs.
 *
 * Acknowledgements: a hub that sends {@link ROLLOUT_REPORT_ACKS_HEADER}
 * keeps its side of the stream open and writes one {@link ReportAck} line
 * for the lines it has taken; the agent then numbers its lines (`seq`) and
 * writes a line the hub has not acknowledged again (the latest of its
 * rollout) until it is. An agent or hub without it works as before.
 */
export const ROLLOUT_REPORTS_PATH = '/.edgeadm/rollout/reports';
/** Request header of the report stream: the hub acknowledges the lines it takes (value `1`). */
export const ROLLOUT_REPORT_ACKS_HEADER = 'edgeadm-report-acks';
/** Hub to agent, one JSON line on the report stream: every line up to `ack` (its `seq`) was taken. */
export interface ReportAck {
  ack: number;
}
/** Longest acknowledgement line the agent reads; longer ones are dropped. */
export const MAX_REPORT_ACK_LINE_BYTES = 256;

/** Who a rollout acts as on the cluster: its owner, as the hub's kube proxy would impersonate them. */
export interface RolloutOwner {
  user: string;
  groups: string[];
}

/** A copy to apply. */
export interface CopyMessage {
  rollout: string;
  owner: RolloutOwner;
  copy: RenderedCopy;
}

/** Each rendered copy's JSON, made once however many clusters the copy goes to. */
const copyJson = new WeakMap<RenderedCopy, string>();

/** A copy message as JSON (what `JSON.stringify` gives), the copy serialized once per rendered copy. */
export function copyMessageJson(message: CopyMessage): string {
  let copy = copyJson.get(message.copy);
  if (copy === undefined) {
    copy = JSON.stringify(message.copy);
    copyJson.set(message.copy, copy);
  }
  return `{"rollout":${JSON.stringify(message.rollout)},"owner":${JSON.stringify(message.owner)},"copy":${copy}}`;
}

/** Remove everything a rollout applied on this cluster (its inventory). */
export interface RemoveMessage {
  rollout: string;
  owner: RolloutOwner;
}

/** An object's identity and its `.status`, as reported for summaries. */
export interface ReportedObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  status?: Record<string, unknown>;
}

/**
 * One report line. `removed` answers a {@link RemoveMessage}. `seq` numbers
 * the lines of one stream when the hub acknowledges them.
 */
export type ReportMessage = (
  | (CopyReport & { kind: 'copy'; rollout: string; objects: ReportedObject[] })
  | { kind: 'removed'; rollout: string; cluster: string; message?: string }
) & { seq?: number };

/** Largest copy message the agent accepts (a 10 MiB Rollout renders to about as much per cluster). */
export const MAX_COPY_MESSAGE_BYTES = 32 * 1024 * 1024;
