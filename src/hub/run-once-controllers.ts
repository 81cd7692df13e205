/**
 * The controllers that must run on one replica at a time (the rollout
 * controller), started when this replica wins the `controllers` lead and
 * stopped when it loses it. A controller keeps its state in the store, so
 * the replica that takes over continues where the last leader stopped.
 *
 * On a single replica the lead is won at once, and the hub waits for the
 * controller's start before it serves (as it always did).
 */
import type { Logger } from '../log/run-log.js';
import type { ReplicaCoordination, Stop } from './coordination.js';
import type { HubContext } from './hub-context.js';
import { RolloutController } from './rollout-controller.js';
import type { TunnelRolloutDelivery } from './rollout-tunnel.js';
import type { HubStore } from './store.js';

/** The role name of the run-once controllers in {@link ReplicaCoordination.lead}. */
export const CONTROLLERS_ROLE = 'controllers';

/** Options of {@link RunOnceControllers}. */
export interface RunOnceControllersOptions {
  store: HubStore;
  coordination: ReplicaCoordination;
  delivery: TunnelRolloutDelivery;
  /** Where the running controller is published (`context.rollouts`), for the operator API and the tunnels. */
  context: HubContext;
  /** Clusters whose tunnels this replica holds now (the controller delivers what they are owed). */
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
        const controller = await RolloutController.start({
          store: this.#options.store,
          delivery: this.#options.delivery,
          logger,
          connected: this.#options.connected(),
        });
        // The lead may have been lost while the controller loaded.
        if (!this.#isLeader) {
          await controller.stop();
          return;
        }
        context.rollouts = controller;
        logger.info('this replica runs the rollout controller');
      } else {
        const controller = context.rollouts;
        context.rollouts = undefined;
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
