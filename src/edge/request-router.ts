/**
 * The proxy port's request handling, in the order every request meets it:
 * the one path rule (`parseApiPath`, else 400), the identity (else 401), then
 * by verb and upstream state — a watch takes a slot (else 429) and goes to
 * the watch relay, a request goes upstream while online and is answered
 * from the cache or refused while offline. Each step's work is in its own
 * module; this one only routes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { parseApiPath, type ApiPath } from '../kube/api-path.js';
import type { Logger } from '../log/run-log.js';
import { apiStatus, rawStatusResponse, sendStatus, type ApiStatus } from './api-status.js';
import type { BufferBudget } from './buffer-budget.js';
import { cacheKeyOf, classifyRequest, identityKeyOf, type ClassifiedRequest } from './cache-key.js';
import type { DiskCache } from './disk-cache.js';
import { forwardHeaders } from './forward-headers.js';
import type { Forwarder } from './forwarding.js';
import { isK3sSupervisorPath, type K3sSupervisorAnswers } from './k3s-supervisor.js';
import { WATCH_QUOTA_RETRY_AFTER_SECONDS } from './limits.js';
import type { RequestCounters } from './metrics.js';
import type { OfflineAnswers } from './offline-answers.js';
import { peerCertificateOf, resolveIdentity, type ResolvedIdentity } from './request-identity.js';
import type { UpstreamClient } from './upstream-client.js';
import type { UpstreamState } from './upstream-state.js';
import { siteFilteredAnswer } from './site-filter.js';
import { relayWatch } from './watch-relay.js';
import type { WatchQuota, WatchQuotaRefusal } from './watch-quota.js';

/** What the router hands requests to. */
export interface RouterParts {
  cache: DiskCache;
  upstream: UpstreamClient;
  state: UpstreamState;
  budget: BufferBudget;
  watchQuota: WatchQuota;
  forwarder: Forwarder;
  offline: OfflineAnswers;
  counters: RequestCounters;
  logger: Logger;
  /** The `--client-cert-map` CNs. */
  mappedCns: { has(cn: string): boolean };
  /** The k3s supervisor's start-up answers (`--k3s-supervisor`); none: `/v1-k3s/` is forwarded as any path. */
  k3sSupervisor?: K3sSupervisorAnswers | undefined;
  /** The node's site: grid Services' EndpointSlices are answered with its endpoints only (site-filter.ts). */
  site?: string | undefined;
}

/** The 400 for a request target that fails the one path rule. Pure. */
export function badPathStatus(message: string): ApiStatus {
  return apiStatus(
    400,
    'BadRequest',
    `edge-proxy: ${message}; request paths are forwarded only when they have exactly one reading`,
  );
}

/** The 429 for a watch refused a slot, with its Retry-After. Pure. */
export function watchQuotaStatus(refusal: WatchQuotaRefusal, quota: { perIdentity: number; total: number }) {
  return apiStatus(
    429,
    'TooManyRequests',
    refusal === 'identity'
      ? `edge-proxy: this client already has ${quota.perIdentity} open watches (the most one client may hold)`
      : `edge-proxy: ${quota.total} watches are open (the most this proxy holds)`,
    { retryAfterSeconds: WATCH_QUOTA_RETRY_AFTER_SECONDS },
  );
}

/** Routes the proxy port's requests and upgrades. */
export class RequestRouter {
  /** Watches held open through an outage (for metrics). */
  heldWatches = 0;

  constructor(private readonly parts: RouterParts) {}

  /** The server's `request` handler. */
  readonly handle = (req: IncomingMessage, response: ServerResponse): void => {
    let res = response;
    const target = this.#checkedTarget(req, (status) => {
      req.resume();
      sendStatus(res, status);
    });
    if (!target) return;
    // From here every answer to an EndpointSlice read, forwarded, relayed or cached, passes the site filter.
    if (this.parts.site !== undefined) res = siteFilteredAnswer(req, res, target.path, this.parts.site);
    const resolved = this.#resolve(req);
    if ('refusal' in resolved) {
      req.resume();
      sendStatus(res, apiStatus(401, 'Unauthorized', `edge-proxy: ${resolved.refusal}`));
      return;
    }
    const classified = classifyRequest(req.method ?? 'GET', target, req.headers.accept);
    const identityKey = identityKeyOf(this.parts.cache.installKey, resolved.identity);
    if (this.parts.k3sSupervisor && isK3sSupervisorPath(target.path, this.parts.state.isOnline)) {
      const caller = {
        identityKey,
        clientCertCn: resolved.clientCertCn,
        isAuthenticated: resolved.identity.principal !== 'anonymous',
      };
      void this.parts.k3sSupervisor.handle(req, res, target, caller).catch((error: unknown) => {
        this.parts.logger.warn(`edge-proxy: ${target.path}: ${(error as Error).message}`);
        sendStatus(res, apiStatus(502, 'BadGateway', 'edge-proxy: the k3s supervisor request failed'));
      });
      return;
    }
    const request = { req, classified, identityKey, clientCertCn: resolved.clientCertCn };
    if (classified.verb === 'watch') {
      this.#watch(request, res);
      return;
    }
    if (!this.parts.state.isOnline) {
      void this.parts.offline.answer(req, res, classified, identityKey).catch((error) => {
        this.parts.logger.warn(`edge-proxy: offline answer failed: ${(error as Error).message}`);
        sendStatus(res, apiStatus(500, 'InternalError', 'edge-proxy: cannot answer from the cache'));
      });
      return;
    }
    this.parts.forwarder.forward(request, res);
  };

  /** The server's `upgrade` handler. */
  readonly handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    const target = this.#checkedTarget(req, (status) => socket.end(rawStatusResponse(status)));
    if (!target) return;
    const resolved = this.#resolve(req);
    if ('refusal' in resolved) {
      socket.end(rawStatusResponse(apiStatus(401, 'Unauthorized', `edge-proxy: ${resolved.refusal}`)));
      return;
    }
    // Offline, the k3s agent's tunnel is held for the node's own certificate (k3s-supervisor.ts).
    if (this.parts.k3sSupervisor?.handleUpgrade(req, socket, target, resolved.clientCertCn)) return;
    this.parts.forwarder.upgrade(req, target, resolved.clientCertCn, socket, head);
  };

  /** Every watch takes a slot, whatever form it streams in. */
  #watch(
    request: {
      req: IncomingMessage;
      classified: ClassifiedRequest;
      identityKey: string;
      clientCertCn: string | undefined;
    },
    res: ServerResponse,
  ): void {
    const { req, classified, identityKey, clientCertCn } = request;
    const { watchQuota, state, counters } = this.parts;
    const slot = watchQuota.tryAcquire(identityKey);
    if ('refusal' in slot) {
      counters.count('watch_refused_quota');
      sendStatus(res, watchQuotaStatus(slot.refusal, watchQuota), {
        'retry-after': String(WATCH_QUOTA_RETRY_AFTER_SECONDS),
      });
      return;
    }
    res.once('close', slot.release);
    if (classified.representation === undefined) {
      // A form the proxy cannot read (protobuf only): streamed through, never held offline.
      if (state.isOnline) this.parts.forwarder.forward(request, res);
      else void this.parts.offline.answer(req, res, classified, identityKey);
      return;
    }
    counters.count('forwarded');
    relayWatch({
      req,
      res,
      classified,
      headers: forwardHeaders(req.headers, clientCertCn, false),
      clientCertCn,
      listKey:
        classified.representation === 'json' && classified.isCacheable
          ? cacheKeyOf(identityKey, classified)
          : undefined,
      upstream: this.parts.upstream,
      cache: this.parts.cache,
      budget: this.parts.budget,
      state,
      logger: this.parts.logger,
      onHeld: (delta) => (this.heldWatches += delta),
    });
  }

  /** The request target if it passes the one path rule; otherwise the 400 has been sent. */
  #checkedTarget(req: IncomingMessage, refuse: (status: ApiStatus) => void): ApiPath | undefined {
    const checked = parseApiPath(req.url ?? '');
    if (checked.ok) return checked.value;
    this.parts.counters.count('bad_request_path');
    refuse(badPathStatus(checked.message));
    return undefined;
  }

  /** The request's identity; a refusal is counted (the caller answers 401). */
  #resolve(req: IncomingMessage): ResolvedIdentity {
    const resolved = resolveIdentity(req.headers, peerCertificateOf(req), this.parts.mappedCns);
    if ('refusal' in resolved) this.parts.counters.count('unauthorized');
    return resolved;
  }
}
