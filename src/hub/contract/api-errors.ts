/**
 * The hub API's refusals as its clients see them: an HTTP status and a JSON
 * body `{ code, message }` (the server's HttpError), turned back into a
 * typed error with the same stable code.
 */
import { EdgeadmError } from '../../errors.js';

/** Turns an HttpError answer from the hub API back into a typed error, on the client side. */
export function errorFromApi(status: number, body: string): EdgeadmError {
  try {
    const parsed = JSON.parse(body) as { code?: unknown; message?: unknown };
    if (typeof parsed.message === 'string') {
      return new EdgeadmError(`the hub refused: ${parsed.message}`, {
        code: typeof parsed.code === 'string' ? parsed.code : 'E_HUB_API',
        details: { status },
      });
    }
  } catch {
    // not JSON: fall through
  }
  return new EdgeadmError(`the hub answered HTTP ${status}`, { code: 'E_HUB_API', details: { status } });
}
