/** Per-cluster delivery queues (src/hub/rollouts/delivery-queues.ts). */
import { describe, expect, it } from 'vitest';
import { DeliveryQueues } from '../../../../src/hub/rollouts/delivery-queues.js';
import { silentLogger, type Logger } from '../../../../src/log/run-log.js';

describe('the delivery queues', () => {
  it("runs one cluster's work in order and other clusters' beside it, and says when all is drained", async () => {
    const order: string[] = [];
    let drained = 0;
    const queues = new DeliveryQueues(silentLogger, () => (drained += 1));
    const gate = Promise.withResolvers<void>();
    queues.enqueue('a', async () => {
      await gate.promise;
      order.push('a1');
    });
    queues.enqueue('a', async () => {
      order.push('a2');
    });
    queues.enqueue('b', async () => {
      order.push('b1');
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['b1']);
    expect([queues.inFlight, drained]).toEqual([2, 0]);
    gate.resolve();
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['b1', 'a1', 'a2']);
    expect([queues.inFlight, drained]).toEqual([0, 1]);
  });

  it('logs a failed work and goes on with the next', async () => {
    const warnings: string[] = [];
    const logger: Logger = { ...silentLogger, warn: (message: string) => warnings.push(message) };
    const done = Promise.withResolvers<void>();
    const queues = new DeliveryQueues(logger, () => done.resolve());
    queues.enqueue('a', () => Promise.reject(new Error('tunnel closed')));
    let isNextRun = false;
    queues.enqueue('a', async () => {
      isNextRun = true;
    });
    await done.promise;
    expect(isNextRun).toBe(true);
    expect(warnings).toEqual(['rollout delivery to a failed: tunnel closed']);
  });
});
