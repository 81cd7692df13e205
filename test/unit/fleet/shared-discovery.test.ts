/**
 * A fleet run discovers once for all its hosts: hosts asking at the same
 * time wait for the one discovery, later hosts take its result, and a
 * failure is not kept, so that the next attempt asks the control plane again.
 */
import { describe, expect, it } from 'vitest';
import { sharedDiscovery } from '../../../src/fleet/shared-discovery.js';
import type { DiscoveryRequest, DiscoveryResult } from '../../../src/trust/discovery.js';

const request = { endpoint: 'cp:6443' } as unknown as DiscoveryRequest;
const result = { server: 'https://cp:6443' } as unknown as DiscoveryResult;

/** A discovery that answers only when told to, counting its calls. */
function controlledDiscovery(): {
  discover: (request: DiscoveryRequest) => Promise<DiscoveryResult>;
  calls: DiscoveryRequest[];
  settle: (outcome: DiscoveryResult | Error) => void;
} {
  const calls: DiscoveryRequest[] = [];
  const waiting: Array<(outcome: DiscoveryResult | Error) => void> = [];
  return {
    calls,
    discover: (asked) => {
      calls.push(asked);
      return new Promise((resolve, reject) =>
        waiting.push((outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome))),
      );
    },
    settle: (outcome) => waiting.shift()!(outcome),
  };
}

describe('sharedDiscovery', () => {
  it('discovers once for every host of the run, those asking at once and those asking later', async () => {
    const control = controlledDiscovery();
    const discover = sharedDiscovery({ discover: control.discover });
    const concurrent = Array.from({ length: 10 }, () => discover(request));
    control.settle(result);
    expect(await Promise.all(concurrent)).toEqual(Array.from({ length: 10 }, () => result));
    expect(await discover(request)).toBe(result);
    expect(control.calls).toEqual([request]);
  });

  it('does not keep a failure: the hosts waiting fail with it, the next one asks again', async () => {
    const control = controlledDiscovery();
    const discover = sharedDiscovery({ discover: control.discover });
    const waiting = [discover(request), discover(request)];
    control.settle(new Error('connection refused'));
    for (const outcome of await Promise.allSettled(waiting)) {
      expect(outcome).toMatchObject({ status: 'rejected', reason: { message: 'connection refused' } });
    }
    const retried = discover(request);
    control.settle(result);
    expect(await retried).toBe(result);
    expect(control.calls).toHaveLength(2);
  });

  it('keeps the discoveries of different requests apart', async () => {
    const control = controlledDiscovery();
    const discover = sharedDiscovery({ discover: control.discover });
    const other = { endpoint: 'other:6443' } as unknown as DiscoveryRequest;
    const first = discover(request);
    const second = discover(other);
    control.settle(result);
    control.settle({ server: 'https://other:6443' } as unknown as DiscoveryResult);
    expect(await first).toBe(result);
    expect(await second).toMatchObject({ server: 'https://other:6443' });
    expect(control.calls).toEqual([request, other]);
  });
});
