import { describe, expect, it } from 'vitest';
import type { EdgeadmError } from '../../../src/errors.js';
import { ExitCode, PreflightError } from '../../../src/errors.js';
import { describePhases, flattenPhases, type Phase } from '../../../src/workflow/phase.js';
import { runPhases } from '../../../src/workflow/runner.js';

interface Ctx {
  ran: string[];
  edge: boolean;
  done: Set<string>;
  failAt?: string;
}

/** A phase that records that it ran, reports "unchanged" when already done, and can fail. */
function step(name: string, path = name): Phase<Ctx> {
  return {
    name,
    summary: `the ${name} step`,
    run: async (ctx) => {
      ctx.ran.push(path);
      if (ctx.failAt === path) throw new PreflightError('port 6443 is in use', { code: 'E_PORT', hints: ['free it'] });
      if (ctx.done.has(path)) return 'unchanged';
      ctx.done.add(path);
      return 'changed';
    },
  };
}

const tree: Phase<Ctx>[] = [
  step('preflight'),
  step('package'),
  {
    name: 'edge-addons',
    summary: 'edge components',
    runIf: (ctx) => ctx.edge,
    phases: [step('proxy', 'edge-addons/proxy'), step('tunnel', 'edge-addons/tunnel')],
  },
  step('show-join-command'),
];

const ctx = (over: Partial<Ctx> = {}): Ctx => ({ ran: [], edge: true, done: new Set(), ...over });

describe('phase tree', () => {
  it('flattens into parent/child paths, parents first', () => {
    expect(flattenPhases(tree).map((p) => p.path)).toEqual([
      'preflight',
      'package',
      'edge-addons',
      'edge-addons/proxy',
      'edge-addons/tunnel',
      'show-join-command',
    ]);
  });

  it('describes itself for --help, children indented', () => {
    const text = describePhases(tree);
    expect(text).toMatch(/^preflight +the preflight step$/m);
    expect(text).toMatch(/^ {2}tunnel +the tunnel step$/m);
  });
});

describe('runPhases', () => {
  it('runs every phase in order and reports changes', async () => {
    const c = ctx();
    const report = await runPhases(tree, c);
    expect(c.ran).toEqual(['preflight', 'package', 'edge-addons/proxy', 'edge-addons/tunnel', 'show-join-command']);
    expect(report.changed).toBe(true);
    expect(report.phases.every((p) => p.status === 'changed')).toBe(true);
  });

  it('says "unchanged" for every phase on a re-run after success', async () => {
    const c = ctx();
    await runPhases(tree, c);
    const again = await runPhases(tree, { ...c, ran: [] });
    expect(again.changed).toBe(false);
    expect(again.phases.map((p) => p.status)).toEqual(Array(5).fill('unchanged'));
  });

  it('skips a phase and its children with --skip-phases', async () => {
    const c = ctx();
    const report = await runPhases(tree, c, { skipPhases: ['edge-addons', 'package'] });
    expect(c.ran).toEqual(['preflight', 'show-join-command']);
    expect(report.phases.filter((p) => p.status === 'skipped').map((p) => p.path)).toEqual(['package', 'edge-addons']);
  });

  it('skips a child alone', async () => {
    const c = ctx();
    await runPhases(tree, c, { skipPhases: ['edge-addons/proxy'] });
    expect(c.ran).toContain('edge-addons/tunnel');
    expect(c.ran).not.toContain('edge-addons/proxy');
  });

  it('skips phases whose condition is false, with their children', async () => {
    const c = ctx({ edge: false });
    const report = await runPhases(tree, c);
    expect(c.ran).not.toContain('edge-addons/proxy');
    expect(report.phases.find((p) => p.path === 'edge-addons')).toMatchObject({ status: 'skipped' });
  });

  it('runs one phase alone, with its children, for "phase <name>"', async () => {
    const c = ctx({ edge: false });
    const report = await runPhases(tree, c, { only: 'edge-addons' });
    expect(c.ran).toEqual(['edge-addons/proxy', 'edge-addons/tunnel']);
    expect(report.phases.map((p) => p.path)).toEqual(['edge-addons/proxy', 'edge-addons/tunnel']);
  });

  it('rejects unknown phase names with the known ones as a hint (exit 3)', async () => {
    const error = await runPhases(tree, ctx(), { skipPhases: ['edge-addon'] }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'E_UNKNOWN_PHASE', exitCode: ExitCode.Validation });
    expect((error as EdgeadmError).hints[0]).toContain('edge-addons/tunnel');
    const c = ctx();
    await expect(runPhases(tree, c, { only: 'nope' })).rejects.toMatchObject({ code: 'E_UNKNOWN_PHASE' });
    expect(c.ran).toEqual([]);
  });

  it('names the phase path in a failure and keeps the code, exit code and hints', async () => {
    const c = ctx({ failAt: 'edge-addons/tunnel' });
    const error = (await runPhases(tree, c).catch((e: unknown) => e)) as EdgeadmError;
    expect(error.message).toBe('error execution phase edge-addons/tunnel: port 6443 is in use');
    expect(error).toMatchObject({
      code: 'E_PORT',
      exitCode: ExitCode.Preflight,
      details: { phase: 'edge-addons/tunnel' },
    });
    expect(error.hints[0]).toBe('free it');
    expect(c.ran).not.toContain('show-join-command');
  });

  it('wraps a plain error too', async () => {
    const boom: Phase<Ctx>[] = [{ name: 'a', summary: 'a', run: () => Promise.reject(new Error('disk full')) }];
    await expect(runPhases(boom, ctx())).rejects.toMatchObject({
      message: 'error execution phase a: disk full',
      code: 'E_PHASE_FAILED',
    });
  });

  it('times each phase and tells the listener', async () => {
    let t = 0;
    const events: string[] = [];
    const report = await runPhases([step('preflight')], ctx(), {
      now: () => (t += 5),
      listener: {
        onPhaseStart: (p) => events.push(`start ${p}`),
        onPhaseEnd: (r) => events.push(`end ${r.path} ${r.status}`),
      },
    });
    expect(report.phases[0]?.durationMs).toBe(5);
    expect(events).toEqual(['start preflight', 'end preflight changed']);
  });
});
