/**
 * `GET /ui/api/attention`: the web view's "Needs attention" page, the
 * clusters the signed-in user may reach that need an operator now and why
 * (src/hub/attention/), and the halted rollouts the user may see.
 * Authorized exactly as the clusters list: web-api.ts passes the same
 * reachable clusters (its cached copy of the store, scoped by the user's
 * clusters selector, the connection state read live).
 */
import type { ServerResponse } from 'node:http';
import type { HubContext } from '../api/hub-context.js';
import { queryAttention } from '../attention/attention.js';
import { parseAttentionQuery } from '../attention/attention-query.js';
import { haltedRollouts } from '../attention/halted-rollouts.js';
import type { ClusterView } from '../contract/views.js';
import { rolloutActorOf } from '../rollouts/rollout-permissions.js';
import type { UserRecord } from '../store/store.js';
import { sendWebJson } from './web-request.js';

/** Answers one page of the attention list among `clusters`, those `user` may reach. */
export function serveAttention(
  context: HubContext,
  res: ServerResponse,
  params: URLSearchParams,
  scope: { user: UserRecord; clusters: readonly ClusterView[] },
): void {
  const query = parseAttentionQuery(params);
  const halted = haltedRollouts(context.rollouts, rolloutActorOf(scope.user));
  sendWebJson(res, 200, queryAttention(scope.clusters, halted, query, context.now().getTime()));
}
