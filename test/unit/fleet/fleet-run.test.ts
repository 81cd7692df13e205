import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runFleet, type FleetStage } from '../../../src/fleet/fleet-run.js';
import { upStages } from '../../../src/fleet/fleet-up.js';
import { parseInventory } from '../../../src/fleet/inventory/load-inventory.js';
import { hostLogPath, type RunState } from '../../../src/fleet/run-state.js';

const INVENTORY = `kind: FleetInventory
controlPlane:
  endpoint: lb
  hosts: { cp2: , cp3: }
nodeGroups:
  stores:
    hosts: { n1: , n2: , n3: }
`;
const { hosts } = parseInventory(INVENTORY, 'inv.yaml');
const SECRET = 'f'.repeat(64);

/** Control planes one at a time, blocking the nodes when one fails; then the nodes. */
const stages: FleetStage[] = [
  {
    includes: (host) => host.role === 'control-plane',
    rollout: { concurrency: 1, maxFailures: { count: 0 } },
    blocksLaterStages: {
      reason: 'control-plane-failed',
      message: (failed) => `not started: ${failed.join(', ')} failed`,
    },
  },
  { includes: (host) => host.role === 'worker', rollout: { concurrency: 3 } },
];

async function run(options: { failing: Set<string>; home: string; resume?: string }) {
  const started: string[] = [];
  const result = await runFleet({
    command: 'up',
    inventoryFile: 'inv.yaml',
    hosts,
    edgeadmHome: options.home,
    ...(options.resume === undefined ? {} : { resume: options.resume }),
    rollout: { concurrency: 10 },
    stages,
    redact: (text) => text.replaceAll(SECRET, '<redacted>'),
    task: async (host, context) => {
      started.push(host.name);
      context.log(`joining with --certificate-key ${SECRET}`);
      if (options.failing.has(host.name)) throw new Error(`${host.name}: join --certificate-key ${SECRET} failed`);
    },
  });
  return { ...result, started };
}

describe('runFleet in stages', () => {
  it('stops before the nodes when a control plane fails, keeps secrets out of the state file and the logs, and a resume runs what is left', async () => {
    const home = mkdtempSync(join(tmpdir(), 'fleet-run-'));
    const first = await run({ failing: new Set(['cp3']), home });
    expect(first.started).toEqual(['cp2', 'cp3']);
    expect(first.state.stopReason).toBe('control-plane-failed');
    expect(['n1', 'n2', 'n3'].map((name) => first.state.hosts[name])).toEqual(
      ['n1', 'n2', 'n3'].map(() => ({
        status: 'skipped',
        attempts: 0,
        error: { code: 'E_FLEET_NOT_STARTED', message: 'not started: cp3 failed' },
      })),
    );
    const saved = readFileSync(join(first.runDir, 'state.json'), 'utf8');
    expect(saved).not.toContain(SECRET);
    expect((JSON.parse(saved) as RunState).hosts.cp3!.error!.message).toBe(
      'cp3: join --certificate-key <redacted> failed',
    );
    expect(readFileSync(hostLogPath(first.runDir, 'cp3'), 'utf8')).not.toContain(SECRET);

    const resumed = await run({ failing: new Set(), home, resume: 'last' });
    expect(resumed.runDir).toBe(first.runDir);
    expect(resumed.started).toEqual(['cp3', 'n1', 'n2', 'n3']);
    expect(resumed.state.stopReason).toBeUndefined();
    expect(Object.values(resumed.state.hosts).every((host) => host.status === 'done')).toBe(true);
  });

  it('refuses to resume a run of another command', async () => {
    const home = mkdtempSync(join(tmpdir(), 'fleet-run-'));
    await run({ failing: new Set(), home });
    await expect(
      runFleet({
        command: 'reset',
        inventoryFile: 'inv.yaml',
        hosts,
        edgeadmHome: home,
        resume: 'last',
        rollout: { concurrency: 1 },
        task: async () => undefined,
      }),
    ).rejects.toThrow(/was a fleet up run, not fleet reset/);
  });
});

describe('runFleet wave numbers (newcomer point 23)', () => {
  it('numbers the waves from firstWave on, as fleet plan numbers them after fleet up’s init', async () => {
    const waves: number[] = [];
    await runFleet({
      command: 'up',
      inventoryFile: 'inv.yaml',
      hosts,
      edgeadmHome: mkdtempSync(join(tmpdir(), 'fleet-run-')),
      rollout: { concurrency: 10 },
      stages: upStages({ concurrency: 10 }),
      firstWave: 2,
      onEvent: (event) => {
        if (event.type === 'wave') waves.push(event.wave);
      },
      task: async () => undefined,
    });
    // cp2 and cp3 a wave each, then the three nodes in one wave.
    expect(waves).toEqual([2, 3, 4]);
  });
});
