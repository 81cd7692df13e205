/**
 * The rollout engine: runs one async task per host of a {@link RunState} in
 * waves (a canary wave first, then waves of `--wave-size`), at most
 * `--concurrency` at once, retrying with exponential backoff, and stops
 * starting hosts once the failure budget (`--max-failures`) is exceeded or the
 * run is cancelled. Hosts already running finish; hosts never started are
 * marked skipped with the reason, so that `--resume` runs them later.
 *
 * No I/O: time, sleeping and persistence are injected, and every change is
 * reported through `onEvent` (the command saves the state there).
 */
import { EdgeadmError, ExitCode } from '../errors.js';
import type { HostRunState, RunState, StopReason } from './run-state.js';

/** A count, or a percentage of the run's hosts (`20%`). */
export type CountSpec = { count: number } | { percent: number };

/** Parses `N` or `P%` (as given to `--wave-size` and `--max-failures`). */
export function parseCountSpec(text: string, flag: string): CountSpec {
  const match = /^(\d+)(%?)$/.exec(text.trim());
  const value = match ? Number(match[1]) : Number.NaN;
  if (!match || (match[2] === '%' && value > 100)) {
    throw new EdgeadmError(`${flag} ${text}: expected a number or a percentage such as 20%`, {
      code: 'E_USAGE',
      exitCode: ExitCode.Validation,
    });
  }
  return match[2] === '%' ? { percent: value } : { count: value };
}

/** The count a spec stands for among `total` hosts (percentages round down). */
export function resolveCountSpec(spec: CountSpec, total: number): number {
  return 'count' in spec ? spec.count : Math.floor((total * spec.percent) / 100);
}

/** Exponential backoff between attempts of one host. */
export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
}

/** Backoff when none is given: 2 s, 4 s, 8 s… up to 30 s. */
export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 2_000, maxMs: 30_000 };

/** What a host task is told. */
export interface HostTaskContext {
  /** 1 for the first attempt of this run. */
  attempt: number;
  /** Aborted when the run is cancelled: finish the current phase, start no other. */
  signal: AbortSignal | undefined;
  /** Records the phase the host is in (reported, and named when it fails). */
  setPhase(phase: string): void;
}

/** A change in the run. */
export type RolloutEvent =
  | { type: 'wave'; wave: number; hosts: string[] }
  | { type: 'start' | 'done'; host: string; attempt: number }
  | { type: 'phase'; host: string; phase: string }
  | { type: 'retry'; host: string; attempt: number; delayMs: number; error: { code: string; message: string } }
  | { type: 'failed'; host: string; attempt: number; error: { code: string; message: string } }
  | { type: 'stopped'; reason: StopReason; skipped: string[] };

/** Options of {@link runRollout}. */
export interface RolloutOptions {
  /** Mutated as the run goes; its pending hosts are the ones run. */
  state: RunState;
  /**
   * Only these hosts of the state (run in the state's order); absent: all of
   * them. A run in stages (`fleet up`: control planes, then nodes) runs one
   * rollout per stage over the same state.
   */
  hosts?: string[];
  task: (host: string, context: HostTaskContext) => Promise<void>;
  /** Hosts at once (at least 1). */
  concurrency: number;
  /** Size of the first wave; 0 or absent for none. */
  canary?: number;
  /** Size of each later wave; absent for one wave of everything left. */
  waveSize?: CountSpec;
  /** Failed hosts tolerated; once exceeded no host starts. Absent: no limit. */
  maxFailures?: CountSpec;
  /** The number of the first wave (a later stage of a run goes on counting from the earlier ones). */
  firstWave?: number;
  /** The stop reason and the skipped hosts' message when `maxFailures` is exceeded; default: the flag's. */
  budgetStop?: { reason: StopReason; message: string };
  /**
   * Asked before each host starts: a stop (its reason and the skipped hosts'
   * message) starts no more hosts; hosts running finish (`fleet upgrade`'s
   * maintenance window).
   */
  startGate?: (state: RunState) => { reason: StopReason; message: string } | undefined;
  /** Extra attempts per host. */
  retries?: number;
  backoff?: BackoffOptions;
  /** Whether a failure is worth another attempt. Default: not for preflight or validation errors. */
  isRetryable?: (error: unknown) => boolean;
  signal?: AbortSignal;
  now?: () => number;
  /** Resolves after `ms`, or early when `signal` aborts. */
  sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  onEvent?: (event: RolloutEvent, state: RunState) => void | Promise<void>;
}

/** Splits the hosts to run into waves. Pure. */
export function planWaves(hosts: string[], options: Pick<RolloutOptions, 'canary' | 'waveSize'>): string[][] {
  const waves: string[][] = [];
  let rest = hosts;
  const canary = Math.min(options.canary ?? 0, rest.length);
  if (canary > 0) {
    waves.push(rest.slice(0, canary));
    rest = rest.slice(canary);
  }
  const size =
    options.waveSize === undefined ? rest.length : Math.max(1, resolveCountSpec(options.waveSize, hosts.length));
  for (let index = 0; index < rest.length; index += size) waves.push(rest.slice(index, index + size));
  return waves;
}

/** Runs the rollout; resolves with the state once no host is running. */
export async function runRollout(options: RolloutOptions): Promise<RunState> {
  const { state, signal } = options;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? defaultSleep;
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const retries = options.retries ?? 0;
  const isRetryable = options.isRetryable ?? defaultIsRetryable;
  const concurrency = Math.max(1, Math.floor(options.concurrency));
  const scope = options.hosts === undefined ? state.order : state.order.filter((n) => options.hosts!.includes(n));
  const pending = scope.filter((name) => state.hosts[name]!.status === 'pending');
  const budget = options.maxFailures === undefined ? Infinity : resolveCountSpec(options.maxFailures, scope.length);
  const budgetStop = options.budgetStop ?? {
    reason: 'max-failures' as const,
    message: `not started: more than ${budget} hosts failed (--max-failures)`,
  };
  let failures = 0;
  let stopReason: StopReason | undefined;
  let gateMessage: string | undefined;
  const emit = async (event: RolloutEvent): Promise<void> => {
    state.updatedAt = new Date(now()).toISOString();
    await options.onEvent?.(event, state);
  };
  const shouldStop = (): boolean => {
    if (stopReason === undefined && signal?.aborted) stopReason = 'cancelled';
    if (stopReason === undefined && failures > budget) stopReason = budgetStop.reason;
    if (stopReason === undefined && options.startGate !== undefined) {
      const closed = options.startGate(state);
      if (closed !== undefined) {
        stopReason = closed.reason;
        gateMessage = closed.message;
      }
    }
    return stopReason !== undefined;
  };

  const runHost = async (name: string): Promise<void> => {
    const host = state.hosts[name]!;
    const started = now();
    for (let attempt = 1; ; attempt++) {
      host.status = 'running';
      host.attempts++;
      delete host.error;
      await emit({ type: 'start', host: name, attempt });
      try {
        await options.task(name, {
          attempt,
          signal,
          setPhase: (phase) => {
            host.phase = phase;
            void emit({ type: 'phase', host: name, phase });
          },
        });
        finish(host, 'done', now() - started);
        await emit({ type: 'done', host: name, attempt });
        return;
      } catch (error) {
        const reported = errorSummary(error);
        if (attempt <= retries && !signal?.aborted && isRetryable(error)) {
          const delayMs = Math.min(backoff.maxMs, backoff.initialMs * 2 ** (attempt - 1));
          host.error = reported;
          await emit({ type: 'retry', host: name, attempt, delayMs, error: reported });
          await sleep(delayMs, signal);
          if (!signal?.aborted) continue;
        }
        host.error = reported;
        finish(host, 'failed', now() - started);
        failures++;
        await emit({ type: 'failed', host: name, attempt, error: reported });
        return;
      }
    }
  };

  for (const [index, wave] of planWaves(pending, options).entries()) {
    if (shouldStop()) break;
    await emit({ type: 'wave', wave: index + (options.firstWave ?? 1), hosts: wave });
    const queue = [...wave];
    const worker = async (): Promise<void> => {
      while (queue.length > 0 && !shouldStop()) await runHost(queue.shift()!);
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, wave.length) }, worker));
  }
  shouldStop();
  const skipped = scope.filter((name) => state.hosts[name]!.status === 'pending');
  // A stop only matters when it left hosts unstarted.
  if (stopReason !== undefined && skipped.length > 0) {
    state.stopReason = stopReason;
    const message =
      stopReason === 'cancelled' ? 'not started: the run was cancelled' : (gateMessage ?? budgetStop.message);
    for (const name of skipped) {
      state.hosts[name] = { ...state.hosts[name]!, status: 'skipped', error: { code: 'E_FLEET_NOT_STARTED', message } };
    }
    await emit({ type: 'stopped', reason: stopReason, skipped });
  }
  return state;
}

function finish(host: HostRunState, status: 'done' | 'failed', durationMs: number): void {
  host.status = status;
  host.durationMs = durationMs;
}

/** The code and message a report shows for a failure. */
export function errorSummary(error: unknown): { code: string; message: string } {
  if (error instanceof EdgeadmError) return { code: error.code, message: error.message };
  const code = (error as { code?: unknown } | undefined)?.code;
  return {
    code: typeof code === 'string' ? code : 'E_FLEET_HOST',
    message: error instanceof Error ? error.message : String(error),
  };
}

function defaultIsRetryable(error: unknown): boolean {
  return !(
    error instanceof EdgeadmError &&
    (error.exitCode === ExitCode.Preflight || error.exitCode === ExitCode.Validation)
  );
}

function defaultSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
