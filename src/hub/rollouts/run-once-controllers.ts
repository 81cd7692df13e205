/**
 * The controllers that must run on one replica at a time (the rollout
 * controller), started when this replica wins the `controllers` lead and
 * stopped when it loses it. A controller keeps its state in the store, so
 * the replica that takes over continues where the last leader stopped.
 *
 * On a single replica the lead is won at once, and the hub waits for the
 * controller's start before it serves (as it always did).
 *
 * Across replicas (issue #16), the controller reaches every cluster,
 * whichever replica holds its tunnel:
 * - Connected means connected to some replica: the tunnels this replica
 *   holds plus every other replica's claims, listed and then watched
 *   (fleet-connections.ts). A cluster whose agent moves to another replica
 *   is told to the controller as connected again, and gets what its last
 *   tunnel had not confirmed. Clusters that connected or left while the
 *   controller loaded are told to it once it runs.
 * - Copies and removals for a cluster held elsewhere go to the holding
 *   replica on the peer control path
 *   (`/hub/peer/v1/control/CLUSTER/rollout/apply|remove`, replica
 *   certificates of this hub only, never handed on again), which writes them
 *   into its tunnel and answers with the agent's outcome (peer-rollouts.ts).
 *   A holder that cannot be reached counts as disconnected: the copy waits
 *   for the cluster's next tunnel, it does not fail the cluster.
 * - Every replica follows the report streams of the tunnels it holds. The
 *   leader gives their lines to its controller; the others forward them to
 *   the leader (`/hub/peer/v1/rollout/reports`), in batches, again after a
 *   delay while no leader takes them.
 * - A report line is acknowledged to the agent only once the leader's
 *   controller wrote it to the store. The leader is the one writer of
 *   rollout progress and keeps it in memory between its writes; a line it
 *   took but did not write when it died is thus never acknowledged, and the
 *   agent sends it again, to the next leader, which loaded the progress its
 *   predecessor wrote. Forwarding rather than writing reports to the store
 *   from every replica keeps one writer and needs no merge of reports.
 */
import type { Logger } from '../../log/run-log.js';
import type { ReplicaCoordination, Stop } from '../store/coordination.js';
import type { HubMetrics } from '../metrics/hub-metrics.js';
import { RolloutController } from './rollout-controller.js';
import { type RolloutDelivery } from './rollout-delivery.js';
import type { HubStore } from '../store/store.js';

/** The role name of the run-once controllers in {@link ReplicaCoordination.lead}. */
export const CONTROLLERS_ROLE = 'controllers';

/**
 * Where the leading replica publishes its running controller: the operator
 * API and the tunnels read `rollouts`, a scrape reads the quarantined count.
 * The hub's context is one.
 */
export interface ControllerSlot {
  rollouts?: RolloutController | undefined;
  metrics: HubMetrics;
}

/** Options of {@link RunOnceControllers}. */
export interface RunOnceControllersOptions {
  store: HubStore;
  coordination: ReplicaCoordination;
  /** Copies and removals to any connected cluster, wherever its tunnel is (peer-rollouts.ts). */
  delivery: RolloutDelivery;
  /** Where the running controller is published (`context.rollouts`), for the operator API and the tunnels. */
  context: ControllerSlot;
  /** Clusters connected to any replica now (the controller delivers what they are owed). */
  connected: () => Iterable<string>;
  logger: Logger;
}

/** The rollout controller, run while this replica leads. */
export class RunOnceControllers {
  readonly #options: RunOnceControllersOptions;
  #stopCampaign: Stop | undefined;
  /** The last start or stop under way: changes of lead are applied one after the other. */
  #transition: Promise<void> = Promise.resolve();
  #isLeader = false;
  #failure: Error | undefined;

  constructor(options: RunOnceControllersOptions) {
    this.#options = options;
  }

  /** Whether this replica leads (runs the controllers) now. */
  get isLeader(): boolean {
    return this.#isLeader;
  }

  /** Campaigns for the lead; resolves once the first change of lead (if one came at once) is applied. */
  async start(): Promise<void> {
    this.#stopCampaign = this.#options.coordination.lead(CONTROLLERS_ROLE, (isLeader) => this.#onLead(isLeader));
    await this.#transition;
    // A controller that cannot load its state at the first start stops the hub, as it always did.
    if (this.#failure !== undefined) throw this.#failure;
  }

  /** Withdraws from the campaign and stops the controller (it writes what it has not written yet). */
  async stop(): Promise<void> {
    this.#stopCampaign?.();
    this.#stopCampaign = undefined;
    this.#onLead(false);
    await this.#transition;
  }

  #onLead(isLeader: boolean): void {
    const { context, logger } = this.#options;
    this.#transition = this.#transition.then(async () => {
      if (isLeader === this.#isLeader) return;
      this.#isLeader = isLeader;
      if (isLeader) {
        const connectedAtStart = new Set(this.#options.connected());
        const controller = await RolloutController.start({
          store: this.#options.store,
          delivery: this.#options.delivery,
          logger,
          connected: connectedAtStart,
        });
        // The lead may have been lost while the controller loaded.
        if (!this.#isLeader) {
          await controller.stop();
          return;
        }
        context.rollouts = controller;
        context.metrics.rolloutsQuarantined = () => controller.quarantinedCount;
        // Clusters that connected or left while it loaded were told to no controller: tell this one.
        const connectedNow = new Set(this.#options.connected());
        for (const cluster of connectedNow) if (!connectedAtStart.has(cluster)) controller.clusterConnected(cluster);
        for (const cluster of connectedAtStart) if (!connectedNow.has(cluster)) controller.clusterDisconnected(cluster);
        logger.info('this replica runs the rollout controller');
      } else {
        const controller = context.rollouts;
        context.rollouts = undefined;
        context.metrics.rolloutsQuarantined = () => 0;
        if (controller !== undefined) {
          await controller.stop();
          logger.info('this replica no longer runs the rollout controller');
        }
      }
    });
    this.#transition = this.#transition.catch((error: Error) => {
      logger.error(`cannot start the rollout controller: ${error.message}`);
      this.#failure = error;
      this.#isLeader = false;
    });
  }
}
