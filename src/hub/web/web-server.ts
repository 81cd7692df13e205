/**
 * The hub's web view, `https://HUB/ui/`: the page and its JSON API under
 * `/ui/api/`, on the hub's own port. hub-server.ts hands every request under
 * `/ui` here ({@link isWebPath}, {@link serveWeb}); nothing else of the hub
 * knows about the view.
 *
 * Who sees what: a session (sessions.ts) names a hub user, read again from
 * the store on every request. Clusters are shown when the kube proxy would
 * let the user reach them (mayReachCluster), rollouts when the operator API
 * would show them, and pause, resume and abort go through the rollout
 * controller with the user as actor, which applies the operator API's rule.
 * Every state-changing request passes the CSRF check (csrfVerdict).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HubContext } from '../api/hub-context.js';
import { HttpError } from '../http/http-replies.js';
import { SECURITY_HEADERS } from './assets.js';
import { API_PREFIX, serveApiRoute } from './web-api.js';
import { header, readWebBody, sendWebJson } from './web-request.js';
import { stateOf } from './web-state.js';

/** The path prefix of the web view. */
export const WEB_PREFIX = '/ui';

/** Whether a request target is the web view's (`/ui`, `/ui/…`). */
export function isWebPath(url: string): boolean {
  return url === WEB_PREFIX || url.startsWith(`${WEB_PREFIX}/`) || url.startsWith(`${WEB_PREFIX}?`);
}

/** Serves a request under `/ui`: the page, its files, or its API. Errors are answered as JSON with the view's headers. */
export async function serveWeb(context: HubContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const state = stateOf(context);
  try {
    await readWebBody(req);
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path === WEB_PREFIX) {
      res.writeHead(308, { ...SECURITY_HEADERS, location: `${WEB_PREFIX}/` }).end();
      return;
    }
    if (path.startsWith(API_PREFIX)) {
      await serveApiRoute(context, state, req, res);
      return;
    }
    const method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, 'E_WEB_METHOD', 'the page is read only');
    if (state.assets === undefined) {
      throw new HttpError(
        503,
        'E_WEB_NOT_BUILT',
        'this edgeadm was built without the web view (run "npm run build", which builds it)',
      );
    }
    const file = path === `${WEB_PREFIX}/` ? 'index.html' : path.slice(WEB_PREFIX.length + 1);
    if (!state.assets.send(res, file, header(req, 'accept-encoding'), method)) {
      throw new HttpError(404, 'E_WEB_NOT_FOUND', `${path} is not part of the web view`);
    }
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    // A body not read to its end (too large, or refused before it was read) is not read on: the connection goes.
    sendWebJson(
      res,
      error.status,
      { code: error.code, message: error.message },
      req.complete ? {} : { connection: 'close' },
    );
  }
}
