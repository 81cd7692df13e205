/**
 * `GET /hub/v1/attention`: which clusters need an operator now, and why
 * (src/hub/contract/attention.ts), for `hub clusters list --attention` and
 * scripts. Any hub user may ask; they see the clusters their clusters
 * selector reaches, as in the web view and through the kube proxy, and the
 * halted rollouts they may see. The clusters are read from the store at
 * each request, as `GET /hub/v1/clusters` reads them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { queryAttention } from '../attention/attention.js';
import { parseAttentionQuery } from '../attention/attention-query.js';
import { haltedRollouts } from '../attention/halted-rollouts.js';
import { ATTENTION_API_PATH } from '../contract/attention.js';
import type { ClusterView } from '../contract/views.js';
import { HttpError, sendJson } from '../http/http-replies.js';
import { rolloutActorOf } from '../rollouts/rollout-permissions.js';
import type { UserRecord } from '../store/store.js';
import { requireUser } from './api-input.js';
import type { HubContext } from './hub-context.js';

/** The clusters a user reaches, as shown (operator-api.ts's, passed in to keep one definition). */
export type ReachableClusterViews = (context: HubContext, user: UserRecord) => Promise<ClusterView[]>;

/** Serves the attention list; false when `url` is not its path. */
export async function serveAttentionApi(
  context: HubContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  reachable: ReachableClusterViews,
): Promise<boolean> {
  if (url.pathname !== ATTENTION_API_PATH) return false;
  if (req.method !== 'GET') throw new HttpError(405, 'E_HUB_METHOD', 'only GET reads the attention list');
  const user = await requireUser(context, req);
  const query = parseAttentionQuery(url.searchParams);
  const halted = haltedRollouts(context.rollouts, rolloutActorOf(user));
  sendJson(res, 200, queryAttention(await reachable(context, user), halted, query, context.now().getTime()));
  return true;
}
