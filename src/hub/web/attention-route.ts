/**
 * `GET /ui/api/attention`: the web view's "Needs attention" page, the
 * clusters the signed-in user may reach that need an operator now and why
 * (src/hub/attention/), from the view's cached list of the store with the
 * connection state read live, and the halted rollouts the user may see.
 * Authorized exactly as the clusters list: the user's clusters selector.
 */
import type { ServerResponse } from 'node:http';
import type { HubContext } from '../api/hub-context.js';
import { queryAttention } from '../attention/attention.js';
import { parseAttentionQuery } from '../attention/attention-query.js';
import { haltedRollouts } from '../attention/halted-rollouts.js';
import { actorOf } from '../rollouts/rollout-permissions.js';
import type { UserRecord } from '../store/store.js';
import { reachableClusters } from './reachable-clusters.js';
import { sendWebJson } from './web-request.js';
import type { WebState } from './web-state.js';

/** Answers one page of the attention list for `user`. */
export async function serveAttention(
  context: HubContext,
  state: WebState,
  user: UserRecord,
  res: ServerResponse,
  params: URLSearchParams,
): Promise<void> {
  const query = parseAttentionQuery(params);
  const clusters = await reachableClusters(context, state, user);
  const halted = haltedRollouts(context.rollouts, actorOf(user));
  sendWebJson(res, 200, queryAttention(clusters, halted, query, context.now().getTime()));
}
