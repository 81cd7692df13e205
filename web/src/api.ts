/**
 * The page's only way to the hub: JSON requests to `/ui/api/`, with the
 * session cookie (sent by the browser) and the session's CSRF token in a
 * header on every request that changes something. A 401 anywhere means the
 * session has ended: the page goes back to sign-in.
 */

/** What the hub answers about the signed-in user. */
export interface SessionInfo {
  user: string;
  isAdmin: boolean;
  clustersSelector: string;
  csrfToken: string;
  expiresAt: string;
}

/** A refused request, with the hub's stable code. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

let csrfToken = '';
const signedOutListeners = new Set<() => void>();

/** Called when any request finds the session gone. */
export function onSignedOut(listener: () => void): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

async function call<T>(method: string, path: string, headers: Record<string, string> = {}): Promise<T> {
  const response = await fetch(`/ui/api/${path}`, {
    method,
    credentials: 'same-origin',
    headers: { accept: 'application/json', ...(method === 'GET' ? {} : { 'x-edgeadm-csrf': csrfToken }), ...headers },
  });
  const body = (await response.json().catch(() => ({}))) as { code?: string; message?: string };
  if (!response.ok) {
    if (response.status === 401 && path !== 'session') for (const listener of signedOutListeners) listener();
    throw new ApiError(response.status, body.code ?? 'E_WEB', body.message ?? response.statusText);
  }
  return body as T;
}

/** GET `/ui/api/PATH`. */
export function get<T>(path: string): Promise<T> {
  return call<T>('GET', path);
}

/** POST `/ui/api/PATH` (a command). */
export function post<T>(path: string): Promise<T> {
  return call<T>('POST', path);
}

/** Exchanges a hub user token for a session. */
export async function signIn(token: string): Promise<SessionInfo> {
  const info = await call<SessionInfo>('POST', 'session', { authorization: `Bearer ${token.trim()}` });
  csrfToken = info.csrfToken;
  return info;
}

/** The current session, if the cookie still names one. */
export async function currentSession(): Promise<SessionInfo | undefined> {
  try {
    const info = await call<SessionInfo>('GET', 'session');
    csrfToken = info.csrfToken;
    return info;
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return undefined;
    throw error;
  }
}

/** Ends the session. */
export async function signOut(): Promise<void> {
  await call('DELETE', 'session');
  csrfToken = '';
}
