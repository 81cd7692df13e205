/**
 * Errors of the hub's etcd store, with stable codes: etcd unreachable or
 * without quorum (writes refused), the encryption key missing or wrong, and
 * a record that is not what edgeadm wrote.
 */
import { EdgeadmError } from '../../../errors.js';

/** The code of a change refused because the store cannot take it now. */
export const STORE_UNAVAILABLE_CODE = 'E_HUB_STORE_UNAVAILABLE';

/** The store (etcd) cannot take changes now: unreachable or without quorum. The message names the cause. */
export class StoreUnavailableError extends EdgeadmError {
  constructor(cause: string, error?: unknown) {
    super(`the hub store is unavailable: ${cause}`, {
      code: STORE_UNAVAILABLE_CODE,
      ...(error === undefined ? {} : { cause: error }),
      hints: [
        'Changes (registrations, tokens, users, rollouts) are refused until etcd has quorum again; open tunnels and kubectl sessions keep working.',
        'Check the etcd members (etcdctl endpoint health) and the --etcd-endpoints the hub was given.',
      ],
    });
    this.name = 'StoreUnavailableError';
  }
}

/** Whether `error` is the store refusing a change because etcd is unavailable. */
export function isStoreUnavailable(error: unknown): error is StoreUnavailableError {
  return error instanceof EdgeadmError && error.code === STORE_UNAVAILABLE_CODE;
}

/** The code of a record in etcd that edgeadm did not write as it reads (changed by hand, or damaged). */
export const STORE_RECORD_INVALID_CODE = 'E_HUB_STORE_RECORD_INVALID';

/**
 * Parses a record the hub stored as JSON (an object). Anything else under
 * one of its keys (text that is not JSON, a bare value) was written by
 * someone else, or damaged: refused with {@link STORE_RECORD_INVALID_CODE}
 * naming the key, never passed on half-read.
 */
export function parseStoredRecord<T extends object>(entry: { key: string; value: string }): T {
  let parsed: unknown;
  try {
    parsed = JSON.parse(entry.value);
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new EdgeadmError(`the record under ${entry.key} in etcd is not one edgeadm wrote`, {
      code: STORE_RECORD_INVALID_CODE,
      exitCode: 3,
      hints: [
        'Something other than a hub replica changed it, or it was damaged: restore it from an etcd backup, or delete it if it can be made again (a hub token, a user).',
      ],
    });
  }
  return parsed as T;
}
