import { describe, expect, it } from 'vitest';
import { runClusterWorkflow, type SayingData } from '../../../src/cluster/run-workflow.js';
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
