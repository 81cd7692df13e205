import { describe, expect, it } from 'vitest';
import { runClusterWorkflow, type SayingData } from '../../../src/cluster/run-workflow.js';
import { DryRunHost } from '../../../src/hosts/dry-run-host.js';
import type { WorkflowEvent } from '../../../src/workflow/events.js';
import type { Phase } from '../../../src/workflow/phase.js';

interface Ctx extends SayingData {
  isInstalled: boolean;
}

const phases: Phase<Ctx>[] = [
  { name: 'preflight', summary: 'check the host', isCheck: true, run: async () => 'unchanged' },
  {
    name: 'install',
    summary: 'install the binary',
    run: async (ctx) => {
      if (ctx.isInstalled) return 'unchanged';
      ctx.isInstalled = true;
      return 'changed';
    },
  },
];

async function linesOf(ctx: Ctx): Promise<string[]> {
  const lines: string[] = [];
  await runClusterWorkflow(phases, ctx, { onLine: (line) => lines.push(line) });
  return lines.map((line) => line.replace(/\d+\.\d s/, 'T'));
}

describe('runClusterWorkflow output', () => {
  it('says a check phase checked, and a phase with nothing left to change already done', async () => {
    const ctx: Ctx = { say: () => undefined, host: { name: 'local' }, isInstalled: false };
    expect(await linesOf(ctx)).toEqual([
      '[preflight] check the host',
      '[preflight] checked (T)',
      '[install] install the binary',
      '[install] done (T)',
    ]);
    expect(await linesOf(ctx)).toEqual([
      '[preflight] check the host',
      '[preflight] checked (T)',
      '[install] install the binary',
      '[install] already done (unchanged, T)',
    ]);
  });
});

describe('runClusterWorkflow under --dry-run (newcomer point 8)', () => {
  const planned: Phase<SayingData>[] = [
    {
      name: 'bootstrap-token',
      summary: 'create the token',
      // What a dry-run kube client does: says what it would create, changes nothing.
      run: async (ctx) => {
        ctx.say('Would create the bootstrap token Secret kube-system/bootstrap-token-abcdef');
        return 'unchanged';
      },
    },
    { name: 'nothing', summary: 'nothing to do', run: async () => 'unchanged' },
  ];

  it('ends a phase that would do something with "would be done", in the lines and the events', async () => {
    const lines: string[] = [];
    const events: WorkflowEvent[] = [];
    const ctx: SayingData = { say: () => undefined, host: new DryRunHost({ name: 'local' }), isDryRun: true };
    await runClusterWorkflow(planned, ctx, { onLine: (line) => lines.push(line), onEvent: (e) => events.push(e) });
    expect(lines.map((line) => line.replace(/\d+\.\d s/, 'T'))).toEqual([
      '[bootstrap-token] create the token',
      '[bootstrap-token] Would create the bootstrap token Secret kube-system/bootstrap-token-abcdef',
      '[bootstrap-token] would be done (dry run, T)',
      '[nothing] nothing to do',
      '[nothing] already done (unchanged, T)',
    ]);
    expect(events.filter((e) => e.type === 'phase-finished').map((e) => [e.phase, e.outcome])).toEqual([
      ['bootstrap-token', 'would-do'],
      ['nothing', 'already-done'],
    ]);
  });
});
