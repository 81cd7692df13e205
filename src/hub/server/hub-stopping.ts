/**
 * A hub's shutdown, graceful or as a crash, in order: stop hearing the
 * store, stop the controllers (they write what is unwritten), close the
 * report streams, stop accepting, drain tunnels and requests, leave the
 * replicas, close the store. Either happens once.
 */
import type { Logger } from '../../log/run-log.js';
import type { ReplicaCoordination } from '../store/coordination.js';
import { type HttpsFront } from '../front/https-front.js';
import type { RunOnceControllers } from '../rollouts/run-once-controllers.js';
import type { HubStore } from '../store/store.js';
import type { TunnelRegistry } from '../replicas/tunnel-registry.js';

/** The parts a hub stops, in order. */
export interface HubStoppingParts {
  logger: Logger;
  stopWatch: () => void;
  tunnels: TunnelRegistry;
  front: HttpsFront;
  controllers: RunOnceControllers;
  reportFollowers: Set<() => void>;
  /** Stops following other replicas' tunnels and forwarding reports. */
  stopRollouts: () => void;
  coordination: ReplicaCoordination;
  store: HubStore;
}

/** Shutdown, graceful or as a crash; either happens once. */
export class HubStopping {
  #done: Promise<void> | undefined;

  constructor(private readonly parts: HubStoppingParts) {}

  /** Stop accepting, drain tunnels and requests, leave the replicas, close the store. */
  close(): Promise<void> {
    const { logger, tunnels, front, controllers, coordination, store } = this.parts;
    this.#done ??= (async () => {
      logger.info('hub shutting down');
      this.parts.stopWatch();
      tunnels.stopSweep();
      // The controller writes what it has not written yet and starts nothing new; the report
      // streams, which never end by themselves, are closed so that the tunnels can drain.
      await controllers.stop();
      this.parts.stopRollouts();
      for (const stop of this.parts.reportFollowers) stop();
      // Stops accepting and closes the idle HTTP connections.
      front.stopAccepting();
      await front.closeConnections(tunnels.drainAll());
      // Claims and the lead go with the replica; then the store.
      await coordination.close().catch((error: Error) => logger.warn(`leaving the replicas: ${error.message}`));
      await store.close();
    })();
    return this.#done;
  }

  /** Every socket destroyed at once; nothing drained, nothing withdrawn (see RunningHub.crash). */
  crash(): Promise<void> {
    const { tunnels, front, controllers } = this.parts;
    this.#done ??= (async () => {
      this.parts.stopWatch();
      tunnels.stopSweep();
      front.destroyAll();
      tunnels.destroyAll();
      this.parts.stopRollouts();
      await controllers.stop().catch(() => undefined);
    })();
    return this.#done;
  }
}
