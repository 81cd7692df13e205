/**
 * Errors of the hub's etcd store, with stable codes: etcd unreachable or
 * without quorum (writes refused), and the encryption key missing or wrong.
 */
import { EdgeadmError } from '../../errors.js';

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
