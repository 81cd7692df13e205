/**
 * Whether the API server is reachable, and the `/readyz` probe loop that
 * decides it: every `--health-interval` while online, at least every
 * {@link OFFLINE_PROBE_INTERVAL_MS} while offline. A connection failure seen
 * by any request also takes the proxy offline at once. Held watches wait
 * here for the upstream to come back.
 *
 * A server whose certificate does not verify against the upstream
 * kubeconfig's CA is offline too (nothing is forwarded to it), but it is not
 * an outage: the server answers, and its CA has changed. That is its own
 * state ({@link UpstreamState.isCertificateRejected}), logged as an error
 * with what to do, and its own metric, so that the operator hears of it
 * instead of a node that stays offline for good (issue #40).
 */
import type { Logger } from '../log/run-log.js';
import { OFFLINE_PROBE_INTERVAL_MS } from './limits.js';
import type { ProbeResult } from './upstream-client.js';

/** What the log says to do when the server's certificate does not verify. */
export const CERTIFICATE_REJECTED_HINT =
  "if the cluster's CA was rotated, give this node the new CA: edgeadm reset on the node, then edgeadm join again with the new --discovery-token-ca-cert-hash (join writes the edge-proxy's upstream.kubeconfig from the CA it verified); if not, find out what answers at the API server's address";

/** What the request paths need to know about the proxy's upstream state. */
export interface UpstreamState {
  readonly isOnline: boolean;
  /** Probes now (unless a probe is running) and resolves with the result. */
  checkNow(): Promise<boolean>;
  /** Calls `callback` once when the upstream is next seen online; returns a cancel function. */
  onceOnline(callback: () => void): () => void;
  /** Reports a connection failure: the proxy goes offline and probes fast. */
  markUnreachable(reason: string): void;
  /** Whether the proxy is offline because the server's certificate does not verify (not an outage). */
  readonly isCertificateRejected: boolean;
  /** Reports a TLS verification failure seen by a request: offline, in the certificate-rejected state. */
  markCertificateRejected(reason: string): void;
}

/** The online/offline state and the probe loop. */
export class UpstreamStateMachine implements UpstreamState {
  #isOnline = true;
  #isCertificateRejected = false;
  #probing: Promise<boolean> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #isStopped = false;
  readonly #waiters = new Set<() => void>();

  /**
   * @param upstream what answers the probe (the upstream client's `/readyz`).
   * @param intervalMs the probe interval while online.
   */
  constructor(
    private readonly upstream: { probe(): Promise<ProbeResult | boolean> },
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  get isOnline(): boolean {
    return this.#isOnline;
  }

  get isCertificateRejected(): boolean {
    return this.#isCertificateRejected;
  }

  checkNow(): Promise<boolean> {
    this.#probing ??= this.upstream.probe().then((answer) => {
      this.#probing = undefined;
      const result: ProbeResult =
        typeof answer === 'boolean' ? { outcome: answer ? 'online' : 'unreachable', reason: '' } : answer;
      const isOnline = result.outcome === 'online';
      this.#setCertificateRejected(result.outcome === 'certificate-rejected', result.reason);
      this.#set(isOnline, isOnline ? 'the readiness probe passed' : `the readiness probe failed: ${result.reason}`);
      return isOnline;
    });
    return this.#probing;
  }

  onceOnline(callback: () => void): () => void {
    const waiter = (): void => {
      this.#waiters.delete(waiter);
      callback();
    };
    this.#waiters.add(waiter);
    return () => this.#waiters.delete(waiter);
  }

  markUnreachable(reason: string): void {
    this.#set(false, reason);
  }

  markCertificateRejected(reason: string): void {
    this.#setCertificateRejected(true, reason);
    this.#set(false, reason);
  }

  /** Logs the change into (and out of) the certificate-rejected state, once each. */
  #setCertificateRejected(isRejected: boolean, reason: string): void {
    if (isRejected === this.#isCertificateRejected) return;
    this.#isCertificateRejected = isRejected;
    if (isRejected) {
      this.logger.error(
        `edge-proxy: the API server answers, but its certificate does not verify against the CA in the upstream kubeconfig (${reason}); this is not an outage, and waiting will not end it. Serving from the cache meanwhile. To fix: ${CERTIFICATE_REJECTED_HINT}`,
      );
    } else {
      this.logger.info("edge-proxy: the API server's certificate is no longer refused");
    }
  }

  /** Starts the probe loop. */
  start(): void {
    this.#schedule();
  }

  /** Stops the probe loop for good. */
  stop(): void {
    this.#isStopped = true;
    clearTimeout(this.#timer);
  }

  #schedule(): void {
    if (this.#isStopped) return;
    clearTimeout(this.#timer);
    const delay = this.#isOnline ? this.intervalMs : Math.min(OFFLINE_PROBE_INTERVAL_MS, this.intervalMs);
    this.#timer = setTimeout(() => void this.checkNow().finally(() => this.#schedule()), delay);
    this.#timer.unref();
  }

  #set(isOnline: boolean, reason: string): void {
    if (isOnline === this.#isOnline) return;
    this.#isOnline = isOnline;
    if (isOnline) {
      this.logger.info(`edge-proxy: the API server is back (${reason}); forwarding again`);
      for (const waiter of [...this.#waiters]) waiter();
    } else {
      this.logger.warn(`edge-proxy: the API server is unreachable (${reason}); serving from the cache`);
    }
    this.#schedule();
  }
}
