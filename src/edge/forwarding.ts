/**
 * Upstream forwarding: a request goes to the API server as the client sent
 * it (the checked target, byte for byte), with the identity it resolved to;
 * bodies stream both ways with backpressure and protocol upgrades are piped.
 * A cacheable read's JSON answer is also held, within the proxy-wide
 * buffering budget, and stored once complete. A connection failure takes
 * the proxy offline and the request is answered as offline.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ApiPath } from '../kube/api-path.js';
import type { Logger } from '../log/run-log.js';
import { apiStatus, rawStatusResponse, sendStatus } from './api-status.js';
import { BufferLease, type BufferBudget } from './buffer-budget.js';
import { cacheKeyOf, type ClassifiedRequest } from './cache-key.js';
import { isCacheableRead, type CachedAnswers } from './cached-answers.js';
import { forwardHeaders, responseHeaders, upgradeResponseHead } from './forward-headers.js';
import { MAX_CACHED_BODY_BYTES, UPSTREAM_RESPONSE_TIMEOUT_MS } from './limits.js';
import type { RequestCounters } from './metrics.js';
import { offlineRefusal } from './offline-writes.js';
import {
  isCertificateRejectedError,
  isUnreachableError,
  timeoutError,
  type UpstreamClient,
} from './upstream-client.js';
import type { UpstreamState } from './upstream-state.js';

/** What forwarding works with. */
export interface ForwardingParts {
  upstream: UpstreamClient;
  state: UpstreamState;
  answers: CachedAnswers;
  budget: BufferBudget;
  counters: RequestCounters;
  logger: Logger;
}

/** One request to forward: the client's, checked and classified, and who it acts as. */
export interface ForwardedRequest {
  req: IncomingMessage;
  classified: ClassifiedRequest;
  identityKey: string;
  clientCertCn: string | undefined;
}

/**
 * Whether an upstream answer is kept for the cache: a cacheable read's
 * uncompressed 200 JSON answer. Pure.
 */
export function isKeptAnswer(isCacheable: boolean, status: number, headers: IncomingMessage['headers']): boolean {
  return (
    isCacheable &&
    status === 200 &&
    /^application\/json\b/.test(headers['content-type'] ?? '') &&
    headers['content-encoding'] === undefined
  );
}

/** Forwards requests and upgrades upstream. */
export class Forwarder {
  constructor(private readonly parts: ForwardingParts) {}

  /** Forwards one request; one that finds the upstream unreachable is answered as offline. */
  forward(request: ForwardedRequest, res: ServerResponse): void {
    const { req, classified, identityKey, clientCertCn } = request;
    const { upstream, state, counters, logger, answers } = this.parts;
    const isCacheable = isCacheableRead(classified);
    const headers = forwardHeaders(req.headers, clientCertCn, false);
    if (isCacheable) {
      // The cache keeps decoded JSON: ask for it uncompressed (a Go client's "protobuf,json" takes JSON too).
      delete headers['accept-encoding'];
      if (classified.representation === 'json') headers.accept = 'application/json';
    }
    const upstreamRequest = upstream.request({
      method: req.method ?? 'GET',
      path: classified.target.target,
      headers,
      clientCertCn,
    });
    let hasResponse = false;
    const timer = isCacheable
      ? setTimeout(
          () => upstreamRequest.destroy(timeoutError('waiting for the API server')),
          UPSTREAM_RESPONSE_TIMEOUT_MS,
        )
      : undefined;
    res.on('close', () => {
      clearTimeout(timer);
      if (!res.writableFinished) upstreamRequest.destroy();
    });
    upstreamRequest.on('response', (upstreamResponse) => {
      clearTimeout(timer);
      hasResponse = true;
      this.#relayResponse(request, isCacheable, upstreamResponse, res);
    });
    upstreamRequest.on('error', (error) => {
      clearTimeout(timer);
      if (hasResponse || res.destroyed) {
        res.destroy();
        return;
      }
      if (isUnreachableError(error)) {
        state.markUnreachable(error.message);
        if (isCacheable) {
          void answers.serve(req, res, classified, identityKey);
        } else {
          counters.count('write_refused_offline');
          sendStatus(res, offlineRefusal(req.method ?? 'GET', classified.path));
        }
        return;
      }
      // Not an outage: the server answers with a certificate the proxy's CA does not sign (see upstream-state.ts).
      if (isCertificateRejectedError(error)) state.markCertificateRejected(error.message);
      counters.count('upstream_error');
      logger.warn(`edge-proxy: ${req.method} ${classified.path} failed upstream: ${error.message}`);
      sendStatus(
        res,
        apiStatus(502, 'InternalError', `edge-proxy: the request to the API server failed: ${error.message}`),
      );
    });
    req.pipe(upstreamRequest);
  }

  /** Passes the upstream answer to the client, holding a cacheable one (within the budget) to store it. */
  #relayResponse(
    request: ForwardedRequest,
    isCacheable: boolean,
    upstreamResponse: IncomingMessage,
    res: ServerResponse,
  ): void {
    const { classified, identityKey } = request;
    const { counters, answers } = this.parts;
    const key = cacheKeyOf(identityKey, classified);
    const status = upstreamResponse.statusCode ?? 502;
    res.writeHead(status, upstreamResponse.statusMessage, responseHeaders(upstreamResponse.headers));
    // A watch may send nothing for minutes: its client must see the answer start now.
    if (classified.verb === 'watch') res.flushHeaders();
    const contentType = upstreamResponse.headers['content-type'] ?? '';
    let isKept = isKeptAnswer(isCacheable, status, upstreamResponse.headers);
    const chunks: Buffer[] = [];
    let size = 0;
    // The answer is held until stored, within the proxy-wide budget.
    const lease = new BufferLease(this.parts.budget);
    let isStoring = false;
    if (isKept) {
      upstreamResponse.on('data', (chunk: Buffer) => {
        if (!isKept) return;
        size += chunk.length;
        const fits = size <= MAX_CACHED_BODY_BYTES && lease.tryTake(chunk.length);
        if (!fits) {
          isKept = false;
          chunks.length = 0;
          lease.release();
          if (size <= MAX_CACHED_BODY_BYTES) counters.count('not_cached_memory_bound');
        } else chunks.push(chunk);
      });
    }
    upstreamResponse.on('end', () => {
      counters.count('forwarded');
      if (isKept && upstreamResponse.complete) {
        isStoring = true;
        void answers
          .store(key, identityKey, classified, contentType, Buffer.concat(chunks))
          .finally(() => lease.release());
        chunks.length = 0;
      }
      if (isCacheable && status === 404) answers.forget(key);
    });
    upstreamResponse.on('close', () => {
      if (!isStoring) lease.release();
    });
    upstreamResponse.on('aborted', () => res.destroy());
    upstreamResponse.on('error', () => res.destroy());
    upstreamResponse.pipe(res);
  }

  /** Forwards a protocol upgrade (exec, attach, port-forward) and pipes the two sockets. */
  upgrade(req: IncomingMessage, target: ApiPath, clientCertCn: string | undefined, socket: Duplex, head: Buffer): void {
    const { upstream, state, counters } = this.parts;
    const path = target.path;
    if (!state.isOnline) {
      counters.count('write_refused_offline');
      socket.end(rawStatusResponse(offlineRefusal(req.method ?? 'GET', path)));
      return;
    }
    const request = upstream.request({
      method: req.method ?? 'GET',
      path: target.target,
      headers: forwardHeaders(req.headers, clientCertCn, true),
      clientCertCn,
    });
    request.on('upgrade', (upstreamResponse, upstreamSocket, upstreamHead) => {
      counters.count('forwarded');
      socket.write(
        upgradeResponseHead(
          upstreamResponse.statusCode,
          upstreamResponse.statusMessage,
          upstreamResponse.rawHeaders,
          true,
        ),
      );
      if (upstreamHead.length > 0) socket.write(upstreamHead);
      if (head.length > 0) upstreamSocket.write(head);
      upstreamSocket.on('error', () => socket.destroy());
      socket.on('error', () => upstreamSocket.destroy());
      upstreamSocket.on('close', () => socket.destroy());
      socket.on('close', () => upstreamSocket.destroy());
      // pipe() pauses each side while the other's buffer is full.
      upstreamSocket.pipe(socket);
      socket.pipe(upstreamSocket);
    });
    request.on('response', (upstreamResponse) => {
      // The API server refused the upgrade (403, 400…): pass its answer on and close.
      counters.count('forwarded');
      socket.write(
        upgradeResponseHead(
          upstreamResponse.statusCode,
          upstreamResponse.statusMessage,
          upstreamResponse.rawHeaders,
          false,
        ),
      );
      upstreamResponse.pipe(socket);
    });
    request.on('error', (error) => {
      if (isUnreachableError(error)) state.markUnreachable(error.message);
      else if (isCertificateRejectedError(error)) state.markCertificateRejected(error.message);
      counters.count('upstream_error');
      socket.end(
        rawStatusResponse(
          isUnreachableError(error)
            ? offlineRefusal(req.method ?? 'GET', path)
            : apiStatus(502, 'InternalError', `edge-proxy: the upgrade to the API server failed: ${error.message}`),
        ),
      );
    });
    request.end();
  }
}
