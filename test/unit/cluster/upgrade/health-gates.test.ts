import { describe, expect, it } from 'vitest';
import { k3sDistribution } from '../../../../src/cluster/distributions/k3s.js';
import { apiReadyGate } from '../../../../src/cluster/upgrade/health-gates.js';
import type { Host } from '../../../../src/hosts/host.js';

describe('a health gate', () => {
  it('keeps asking until its deadline, then fails naming the gate and the last reason (clock injected)', async () => {
    let time = 0;
    let asked = 0;
    const host = {
      name: 'root@10.0.0.10:22',
      exec: async () => {
        asked += 1;
        return { command: 'cat', exitCode: 1, stdout: '', stderr: 'No such file or directory' };
      },
    } as unknown as Host;
    const gate = apiReadyGate({
      host,
      distribution: k3sDistribution,
      nodeName: 'cp',
      version: 'v1.32.1+k3s1',
      timeoutMs: 10_000,
      now: () => time,
      sleep: async (ms) => {
        time += ms;
      },
    });
    await expect(gate).rejects.toMatchObject({
      code: 'E_UPGRADE_GATE',
      gate: 'api-ready',
      message: expect.stringMatching(
        /^the api-ready gate did not pass within 10 s: cannot read \/etc\/rancher\/k3s\/k3s.yaml/,
      ) as unknown,
    });
    // Every 500 ms over 10 s, and once more at the deadline.
    expect(asked).toBe(22);
  });
});
