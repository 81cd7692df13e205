/**
 * The fleet follows each host's phase through the workflow's events, never
 * through its lines: a phase that prints a line that looks like another
 * phase's (`[other] …`) does not move the host's phase in the progress or the
 * report, and the events reach `onWorkflowEvent` named by the inventory name.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { distributionFor } from '../../../src/cluster/distributions/index.js';
import * as reset from '../../../src/cluster/reset.js';
import { EdgeadmError } from '../../../src/errors.js';
import { runningHostLines } from '../../../src/fleet/fleet-progress.js';
import { fleetReset } from '../../../src/fleet/fleet-reset.js';
import type { FleetHost } from '../../../src/fleet/inventory/types.js';
import type { RunState } from '../../../src/fleet/run-state.js';
import * as connect from '../../../src/hosts/connect.js';
import type { Host } from '../../../src/hosts/host.js';
import { silentLogger } from '../../../src/log/run-log.js';
import type { WorkflowEvent } from '../../../src/workflow/events.js';

vi.mock('../../../src/hosts/connect.js', { spy: true });
vi.mock('../../../src/cluster/reset.js', { spy: true });

const store: FleetHost = {
  name: 'store-1',
  address: '10.0.0.21',
  ssh: { user: 'root', port: 22 },
  role: 'worker',
  groups: ['stores'],
  labels: {},
  isEdge: false,
};

describe('fleet progress from workflow events', () => {
  it('names the phase the events say, whatever the phase prints', async () => {
    const host = { name: 'root@10.0.0.21:22', close: () => Promise.resolve() } as unknown as Host;
    vi.mocked(connect.connectHost).mockResolvedValue(host);
    let whileRunning: string[] = [];
    let latestState: RunState | undefined;
    vi.mocked(reset.runReset).mockImplementation(async (options) => {
      const event = { time: '2026-01-02T03:04:05.000Z', host: host.name };
      options.onEvent?.({ ...event, type: 'phase-started', phase: 'remove-files', summary: 'Remove files' });
      options.onLine('[remove-files] Remove files');
      // What a phase may well print: a line that looks like another phase's.
      options.onLine('[remove-files] [cleanup-node] removed /etc/rancher');
      options.onLine('[cleanup-node] this line is not a phase');
      whileRunning = runningHostLines(latestState!);
      options.onEvent?.({
        ...event,
        type: 'phase-failed',
        phase: 'remove-files',
        durationMs: 3,
        error: { code: 'E_DISK', message: 'error execution phase remove-files: disk full' },
      });
      throw new EdgeadmError('error execution phase remove-files: disk full', { code: 'E_DISK' });
    });
    const events: WorkflowEvent[] = [];
    const result = await fleetReset({
      inventoryFile: 'inventory.yaml',
      hosts: [store],
      edgeadmHome: mkdtempSync(join(tmpdir(), 'fleet-events-home-')),
      rollout: { concurrency: 1 },
      connect: { acceptNewHostKeys: true, connectTimeoutMs: 2_000, agentSocket: '', keyFiles: [] },
      logger: silentLogger,
      isDryRun: false,
      isForced: false,
      distribution: distributionFor('k3s'),
      requestedServiceManager: 'direct',
      onEvent: (_event, state) => (latestState = state),
      onWorkflowEvent: (e) => events.push(e),
    });
    expect(whileRunning).toEqual(['store-1: remove-files']);
    expect(result.hosts).toEqual([
      expect.objectContaining({ host: 'store-1', status: 'failed', phase: 'remove-files' }),
    ]);
    expect(events.map((e) => [e.type, e.host, e.phase])).toEqual([
      ['phase-started', 'store-1', 'remove-files'],
      ['phase-failed', 'store-1', 'remove-files'],
    ]);
  });
});
