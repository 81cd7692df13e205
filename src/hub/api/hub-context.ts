/**
 * What the hub's handlers share: the store, the PKI, the open tunnels, the
 * metrics and the rollout controller. Bearer tokens are authenticated in
 * `identity/authenticate.ts`, against this same store and clock.
 */
import type { Logger } from '../../log/run-log.js';
import type { HubTunnel } from '../../tunnel/hub-tunnel.js';
import type { ReplicaCoordination } from '../store/coordination.js';
import type { HubPki } from '../identity/hub-pki.js';
import type { HubMetrics } from '../metrics/hub-metrics.js';
import type { PeerCredentials } from '../replicas/peer-link.js';
import type { RolloutController } from '../rollouts/rollout-controller.js';
import type { HubStore } from '../store/store.js';
import type { ClusterHealthBook } from '../health/health-book.js';
import type { ClusterListCache } from '../store/cluster-list-cache.js';

/** The hub's shared state. */
export interface HubContext {
  store: HubStore;
  pki: HubPki;
  metrics: HubMetrics;
  logger: Logger;
  /** `https://host:port` the hub is reached at (written into configs and the discovery document). */
  advertiseUrl: string;
  /** Open tunnels by cluster name. */
  tunnels: Map<string, HubTunnel>;
  /** Closes the tunnel of a cluster, if open (on delete). */
  closeTunnel(cluster: string): void;
  /**
   * The hub's clock. Every expiry decision on a credential (user tokens, hub
   * tokens) reads it, so that tests decide what time it is instead of sleeping.
   */
  now(): Date;
  /**
   * The rollout controller; absent where a hub runs without rollouts (tests
   * of other parts), and on a replica that does not lead.
   */
  rollouts?: RolloutController;
  /**
   * The registered clusters, one store read shared by the requests of a
   * second (the web view, the attention list, the metrics); absent where a
   * hub runs without it (tests of other parts), which then read the store.
   */
  clusterList?: ClusterListCache;
  /** The latest health reports of the tunnels held here; absent where a hub runs without them (tests of other parts). */
  health?: ClusterHealthBook;
  /** The replicas' coordination: who holds which tunnel. Absent: tunnels held here are all there is. */
  coordination?: ReplicaCoordination;
  /** This replica's client certificate towards the others (forwarded operator requests). */
  peerCredentials?: PeerCredentials;
}
