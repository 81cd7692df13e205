import { describe, expect, it } from 'vitest';
import type { EdgeadmError } from '../../../src/errors.js';
import { ExitCode, PreflightError } from '../../../src/errors.js';
import { describePhases, flattenPhases, type Phase } from '../../../src/workflow/phase.js';
import type { WorkflowEvent } from '../../../src/workflow/events.js';
import { runPhases, type RunOptions } from '../../../src/workflow/runner.js';

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

  it('tells how to go on: re-run after a real run, run the dry run again after a dry run', async () => {
    const real = (await runPhases(tree, ctx({ failAt: 'edge-addons/tunnel' })).catch(
      (e: unknown) => e,
    )) as EdgeadmError;
    expect(real.hints.at(-1)).toBe(
      'After fixing it, re-run the whole command: finished phases are skipped as already done.',
    );
    const dry = (await runPhases(tree, ctx({ failAt: 'edge-addons/tunnel' }), { isDryRun: true }).catch(
      (e: unknown) => e,
    )) as EdgeadmError;
    expect(dry.hints.at(-1)).toBe('After fixing it, run the dry run again: it changed nothing on the host.');
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
      onEvent: (e) => events.push(`${e.type} ${e.phase}${e.type === 'phase-finished' ? ` ${e.outcome}` : ''}`),
    });
    expect(report.phases[0]?.durationMs).toBe(5);
    expect(events).toEqual(['phase-started preflight', 'phase-finished preflight done']);
  });
});

describe('runPhases events', () => {
  const at = new Date('2026-01-02T03:04:05.000Z');
  async function eventsOf(c: Ctx, options: Omit<RunOptions, 'onEvent'> = {}): Promise<WorkflowEvent[]> {
    const events: WorkflowEvent[] = [];
    let t = 0;
    await runPhases(tree, c, {
      host: 'root@10.0.0.5:22',
      now: () => (t += 1),
      wallClock: () => at,
      ...options,
      onEvent: (e) => events.push(e),
    }).catch(() => undefined);
    return events;
  }

  it('reports every phase in order, with the host, time and outcome', async () => {
    const events = await eventsOf(ctx());
    expect(events.map((e) => `${e.type} ${e.phase}`)).toEqual([
      'phase-started preflight',
      'phase-finished preflight',
      'phase-started package',
      'phase-finished package',
      'phase-started edge-addons/proxy',
      'phase-finished edge-addons/proxy',
      'phase-started edge-addons/tunnel',
      'phase-finished edge-addons/tunnel',
      'phase-started show-join-command',
      'phase-finished show-join-command',
    ]);
    expect(events[0]).toEqual({
      type: 'phase-started',
      phase: 'preflight',
      summary: 'the preflight step',
      host: 'root@10.0.0.5:22',
      time: '2026-01-02T03:04:05.000Z',
    });
    expect(events[1]).toEqual({
      type: 'phase-finished',
      phase: 'preflight',
      outcome: 'done',
      status: 'changed',
      durationMs: 1,
      host: 'root@10.0.0.5:22',
      time: '2026-01-02T03:04:05.000Z',
    });
  });

  it('says already done on a re-run, checked for a check phase, and would-do under --dry-run', async () => {
    const c = ctx();
    await eventsOf(c);
    const again = await eventsOf({ ...c, ran: [] });
    expect(again.filter((e) => e.type === 'phase-finished').map((e) => e.outcome)).toEqual(
      Array(5).fill('already-done'),
    );
    // The report's word for the same end (newcomer point 23).
    expect(again.filter((e) => e.type === 'phase-finished').map((e) => e.status)).toEqual(Array(5).fill('unchanged'));
    const check: Phase<Ctx>[] = [{ name: 'wait', summary: 'wait', isCheck: true, run: async () => 'unchanged' }];
    const checked: WorkflowEvent[] = [];
    await runPhases(check, ctx(), { onEvent: (e) => checked.push(e) });
    expect(checked[1]).toMatchObject({ type: 'phase-finished', outcome: 'checked', host: 'local' });
    const dry = await eventsOf(ctx(), { isDryRun: true });
    expect(dry.filter((e) => e.type === 'phase-finished').map((e) => e.outcome)).toEqual(Array(5).fill('would-do'));
  });

  it('reports a skipped parent once, with its reason, and not its children', async () => {
    const events = await eventsOf(ctx({ edge: false }), { skipPhases: ['package'] });
    expect(events.filter((e) => e.type === 'phase-skipped')).toEqual([
      expect.objectContaining({ phase: 'package', reason: 'skipped by --skip-phases' }),
      expect.objectContaining({ phase: 'edge-addons', reason: 'not needed for this configuration' }),
    ]);
    expect(events.some((e) => e.phase.startsWith('edge-addons/'))).toBe(false);
  });

  it('reports a failed phase with its path, code and message, and nothing after it', async () => {
    const events = await eventsOf(ctx({ failAt: 'edge-addons/proxy' }));
    expect(events.at(-2)).toMatchObject({ type: 'phase-started', phase: 'edge-addons/proxy' });
    expect(events.at(-1)).toEqual({
      type: 'phase-failed',
      phase: 'edge-addons/proxy',
      durationMs: 1,
      error: { code: 'E_PORT', message: 'error execution phase edge-addons/proxy: port 6443 is in use' },
      host: 'root@10.0.0.5:22',
      time: '2026-01-02T03:04:05.000Z',
    });
  });
});
