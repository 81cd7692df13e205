/**
 * Discovery once per fleet run. Discovery runs on this machine, not on the
 * hosts: every host of a run asks the same control plane the same question
 * (the bootstrap token's JWS, the CA pin) and must get the same answer, so
 * the run asks once and every host's join takes that verified result. Each
 * host still checks it against its own role (`verifyControlPlaneJoin`).
 * Twenty hosts made twenty discoveries: sixty TLS connections and JWS
 * checks in the one edgeadm process, a tenth of a second or more per host.
 *
 * A failed discovery is not kept: hosts waiting on it fail with it (and
 * retry, with `--retries`), and the next attempt asks the control plane again.
 */
import type { Logger } from '../log/run-log.js';
import { discover, type DiscoveryRequest, type DiscoveryResult } from '../trust/discovery.js';

/** Runs one discovery (the real one by default; tests inject their own). */
export type Discover = (request: DiscoveryRequest) => Promise<DiscoveryResult>;

/**
 * A discovery shared by every host of a run: the first call for a request
 * discovers, the others for the same request (the run's one parsed request)
 * wait for it and take its result.
 */
export function sharedDiscovery(
  options: { logger: Logger } | { discover: Discover },
): (request: DiscoveryRequest) => Promise<DiscoveryResult> {
  const run: Discover =
    'discover' in options ? options.discover : (request) => discover(request, { logger: options.logger });
  const pending = new WeakMap<DiscoveryRequest, Promise<DiscoveryResult>>();
  return (request) => {
    let result = pending.get(request);
    if (result === undefined) {
      result = run(request).catch((error: unknown) => {
        pending.delete(request);
        throw error;
      });
      pending.set(request, result);
    }
    return result;
  };
}
