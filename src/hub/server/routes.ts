/**
 * Where each request and upgrade on the hub's HTTPS port goes: the kube
 * proxy (most requests), the web view under `/ui`, the replicas' peer
 * routes, the operator API; and how a refusal is answered (a typed
 * HttpError, a store without quorum, or a 500 that says nothing more).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { HubContext } from '../api/hub-context.js';
import { isStoreUnavailable } from '../store/etcd/errors.js';
import { answerAfterBody, endSocketWithStatus, HttpError, sendJson, sendStatus } from '../http/http-replies.js';
import { proxyRequest, proxyUpgrade } from '../api/kube-proxy.js';
import { parseProxyUrl, parsePeerProxyUrl } from '../api/proxy-target.js';
import { serveApi } from '../api/operator-api.js';
import { servePeerRollouts } from '../rollouts/peer-rollouts.js';
import type { TunnelRolloutDelivery } from '../rollouts/rollout-tunnel.js';
import type { TunnelRegistry } from '../replicas/tunnel-registry.js';
import { isWebPath, serveWeb } from '../web/web-server.js';

/** What the handlers need once the store is open. */
export interface ServingParts {
  context: HubContext;
  tunnels: TunnelRegistry;
  /** Delivery over this replica's own tunnels (what the leader hands over through the peer path). */
  rolloutDelivery: TunnelRolloutDelivery;
}

/** Serves one upgrade: the kube proxy's, or 404. */
export function handleUpgrade(context: HubContext, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  const target = parseProxyUrl(req.url ?? '/') ?? parsePeerProxyUrl(req.url ?? '/');
  if (target === undefined) {
    endSocketWithStatus(socket, 404, 'upgrades are served under /clusters/NAME/ only');
    return;
  }
  proxyUpgrade(context, req, socket, head, target).catch((error: Error) => {
    context.logger.warn(`upgrade failed: ${error.message}`);
    socket.destroy();
  });
}

/** Serves one request: the kube proxy, the web view, the peer routes, the operator API, or 404. */
export async function handleRequest(parts: ServingParts, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { context } = parts;
  try {
    // The kube proxy first: most requests are for it, and its prefix is no other part's.
    const proxied = parseProxyUrl(req.url ?? '/');
    if (proxied !== undefined) return await proxyRequest(context, req, res, proxied);
    // The web view (src/hub/web/) owns everything under /ui.
    if (isWebPath(req.url ?? '/')) return await serveWeb(context, req, res);
    // Replica to replica: rollout copies for a tunnel held here, reports for the leader.
    if (await servePeerRollouts(context, parts.rolloutDelivery, req, res)) return;
    const target = parsePeerProxyUrl(req.url ?? '/');
    if (target !== undefined) {
      await proxyRequest(context, req, res, target);
      return;
    }
    if (!(await serveApi(context, req, res))) sendStatus(res, 404, `${req.url ?? ''} is not served by the hub`);
  } catch (error) {
    // etcd without quorum: the change is refused with the cause, and the client may retry elsewhere or later.
    if (isStoreUnavailable(error)) {
      answerAfterBody(req, () => {
        if (!res.headersSent) sendJson(res, 503, { code: error.code, message: error.message });
      });
      return;
    }
    if (error instanceof HttpError) {
      answerAfterBody(req, () => {
        if (!res.headersSent) sendJson(res, error.status, { code: error.code, message: error.message });
      });
      return;
    }
    context.logger.error(`request ${req.method} ${req.url} failed: ${(error as Error).message}`);
    if (!res.headersSent) sendJson(res, 500, { code: 'E_HUB_INTERNAL', message: 'internal error' });
  }
}
