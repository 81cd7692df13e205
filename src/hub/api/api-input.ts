/**
 * What the operator API's routes check of a request before they act: a hub
 * user or an admin caller, whole numbers within range, percent-encoded path segments.
 */
import type { IncomingMessage } from 'node:http';
import { authenticateUser } from '../identity/authenticate.js';
import { HttpError } from '../http/http-replies.js';
import type { UserRecord } from '../store/store.js';
import type { HubContext } from './hub-context.js';

/** The caller, when their bearer token is a hub user's; a 401 otherwise. */
export async function requireUser(context: HubContext, req: IncomingMessage): Promise<UserRecord> {
  const user = await authenticateUser(context, req);
  if (user === undefined) {
    context.metrics.unauthorizedRequests.inc();
    throw new HttpError(401, 'E_HUB_UNAUTHORIZED', 'a valid hub user token is required');
  }
  return user;
}

/** The caller, when they are a hub admin; a 401 or 403 otherwise. */
export async function requireAdmin(context: HubContext, req: IncomingMessage): Promise<UserRecord> {
  const user = await authenticateUser(context, req);
  if (user === undefined) {
    context.metrics.unauthorizedRequests.inc();
    throw new HttpError(401, 'E_HUB_UNAUTHORIZED', 'a valid hub admin token is required');
  }
  if (!user.isAdmin) throw new HttpError(403, 'E_HUB_FORBIDDEN', `user "${user.name}" is not a hub admin`);
  return user;
}

/**
 * An optional whole number field of an API body, within `[min, max]`. JSON
 * numbers are doubles: `1e308`, `1.5` and `-0.0` all parse, and each would
 * reach a date or the store as something else, so anything that is not a
 * safe integer in range is a 400 here, with the field named.
 */
export function optionalInteger(
  body: Record<string, unknown>,
  key: string,
  range: { min: number; max: number },
): number | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < range.min || value > range.max) {
    throw new HttpError(
      400,
      'E_HUB_BAD_REQUEST',
      `${key} must be a whole number from ${range.min} to ${range.max}, not ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/**
 * Decodes a percent-encoded path segment. A malformed escape (`%E0%A4%A`)
 * or bytes that are not UTF-8 are the client's mistake: a 400, not a throw.
 */
export function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(
      400,
      'E_HUB_BAD_REQUEST',
      `the path segment ${JSON.stringify(segment)} is not valid percent-encoded UTF-8`,
    );
  }
}
