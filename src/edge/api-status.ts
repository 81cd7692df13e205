/**
 * Kubernetes `Status` answers the edge-proxy gives itself (offline refusals,
 * unknown client certificates), worded so that kubectl and the kubelet print
 * something an operator understands.
 */
import type { ServerResponse } from 'node:http';

/** The header that marks an answer served from the edge-proxy cache. */
export const CACHE_HEADER = 'x-edgeadm-edge-proxy';

/** A `metav1.Status` failure. */
export interface ApiStatus {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: string;
  code: number;
  details?: Record<string, unknown>;
}

/** Builds a failure Status. */
export function apiStatus(code: number, reason: string, message: string, details?: Record<string, unknown>): ApiStatus {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
    ...(details ? { details } : {}),
  };
}

/** Writes a Status as the whole answer. */
export function sendStatus(res: ServerResponse, status: ApiStatus, extraHeaders: Record<string, string> = {}): void {
  const body = JSON.stringify(status);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status.code, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...extraHeaders,
  });
  res.end(body);
}

/** A raw HTTP/1.1 answer on a socket that was to be upgraded. */
export function rawStatusResponse(status: ApiStatus): string {
  const body = JSON.stringify(status);
  return `HTTP/1.1 ${status.code} ${status.reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}
