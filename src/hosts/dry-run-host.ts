/**
 * DryRunHost: a {@link Host} that changes nothing and records what would be
 * done, for `--dry-run`. Every command and upload becomes a plan step with a
 * human description. Reads (read-only commands, exists, stat, sha256, facts)
 * are answered by a real host when one is given, so the plan can say "already
 * there, would skip"; without one, a read gets the "nothing there" answer, so
 * the plan shows every step that might be needed.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat as statLocal } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { EdgeadmError } from '../errors.js';
import type { HostFacts } from './facts.js';
import { DEFAULT_FILE_MODE } from './file-transfer.js';
import type {
  ExecOptions,
  ExecResult,
  FactsOptions,
  FileStat,
  GetOptions,
  GetResult,
  Host,
  PutOptions,
  PutResult,
  PutSource,
  ReadOptions,
} from './host.js';

/** One thing the run would do. */
export interface PlanStep {
  /** 1-based order. */
  step: number;
  kind: 'exec' | 'put';
  /** In words: the caller's description, or one made from the command or file. */
  description: string;
  isSudo: boolean;
  /** For `exec`: the command as given. */
  command?: string;
  /** For `put`: the destination path and what it would get. */
  path?: string;
  mode?: string;
  owner?: string;
  size?: number;
  sha256?: string;
  /** For `put`: the host already has this content (known only with a fallback host). */
  isUnchanged?: boolean;
}

/** How a DryRunHost is set up. */
export interface DryRunHostOptions {
  /** The name used in messages (that of the host the plan is for). */
  name?: string;
  /** A real host that answers reads. */
  fallback?: Host;
}

/** Records a plan instead of acting. */
export class DryRunHost implements Host {
  readonly name: string;
  readonly #fallback: Host | undefined;
  readonly #plan: PlanStep[] = [];

  constructor(options: DryRunHostOptions = {}) {
    this.#fallback = options.fallback;
    this.name = options.name ?? options.fallback?.name ?? 'dry-run';
  }

  /** The steps recorded so far, in order. */
  get plan(): readonly PlanStep[] {
    return this.#plan;
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (options.readOnly) {
      if (this.#fallback) return this.#fallback.exec(command, options);
      return { command, exitCode: 0, stdout: '', stderr: '', dryRun: true };
    }
    this.#record({
      kind: 'exec',
      description: options.description ?? `run: ${firstLine(command)}`,
      isSudo: options.sudo === true,
      command,
    });
    return { command, exitCode: 0, stdout: '', stderr: '', dryRun: true };
  }

  async put(source: PutSource, path: string, options: PutOptions = {}): Promise<PutResult> {
    const { size, sha256 } = await describeLocal(source, options);
    const current = sha256 !== undefined && this.#fallback ? await this.#fallback.sha256(path, options) : undefined;
    const isUnchanged = current !== undefined && current === sha256;
    const mode = (options.mode ?? DEFAULT_FILE_MODE).toString(8).padStart(4, '0');
    const origin = typeof source === 'string' ? ` from ${source}` : '';
    const description =
      options.description ??
      `write ${path}${origin} (${size === undefined ? 'size unknown' : `${size} bytes`}, mode ${mode}${options.owner ? `, owner ${options.owner}` : ''})`;
    const step: Omit<PlanStep, 'step'> = { kind: 'put', description, isSudo: options.sudo === true, path, mode };
    if (options.owner !== undefined) step.owner = options.owner;
    if (size !== undefined) step.size = size;
    if (sha256 !== undefined) step.sha256 = sha256;
    if (isUnchanged) step.isUnchanged = true;
    this.#record(step);
    return {
      path,
      sha256: sha256 ?? '',
      size: size ?? 0,
      skipped: isUnchanged,
      bytesSent: 0,
      resumedFrom: 0,
      dryRun: true,
    };
  }

  async get(path: string, destination: string | Writable, options: GetOptions = {}): Promise<GetResult> {
    if (this.#fallback) return this.#fallback.get(path, destination, options);
    throw noHostToRead(`fetch ${path}`);
  }

  async exists(path: string, options: ReadOptions = {}): Promise<boolean> {
    return this.#fallback ? this.#fallback.exists(path, options) : false;
  }

  async stat(path: string, options: ReadOptions = {}): Promise<FileStat | undefined> {
    return this.#fallback ? this.#fallback.stat(path, options) : undefined;
  }

  async sha256(path: string, options: ReadOptions = {}): Promise<string | undefined> {
    return this.#fallback ? this.#fallback.sha256(path, options) : undefined;
  }

  async facts(options: FactsOptions = {}): Promise<HostFacts> {
    if (this.#fallback) return this.#fallback.facts(options);
    throw noHostToRead('collect host facts');
  }

  async close(): Promise<void> {
    await this.#fallback?.close();
  }

  /** The plan as lines for people: `[1] Would write /usr/local/bin/k3s (…) as root`. */
  renderPlan(): string[] {
    return this.#plan.map((step) => {
      const verb = step.isUnchanged ? 'Would skip (unchanged):' : 'Would';
      return `[${step.step}] ${verb} ${step.description}${step.isSudo ? ' (as root)' : ''}`;
    });
  }

  #record(step: Omit<PlanStep, 'step'>): void {
    this.#plan.push({ step: this.#plan.length + 1, ...step });
  }
}

function noHostToRead(what: string): EdgeadmError {
  return new EdgeadmError(`a dry run cannot ${what} without a host to read from`, {
    code: 'E_DRY_RUN_NO_HOST',
    hints: ['Give the dry run a host to read from (--host), or run it on the host itself.'],
  });
}

async function describeLocal(
  source: PutSource,
  options: PutOptions,
): Promise<{ size: number | undefined; sha256: string | undefined }> {
  if (typeof source === 'string') {
    const size = (await statLocal(source)).size;
    if (options.sha256 !== undefined) return { size, sha256: options.sha256 };
    const hash = createHash('sha256');
    await pipeline(createReadStream(source), hash);
    return { size, sha256: hash.digest('hex') };
  }
  if (Buffer.isBuffer(source)) {
    return { size: source.length, sha256: createHash('sha256').update(source).digest('hex') };
  }
  return { size: options.size, sha256: options.sha256 };
}

function firstLine(command: string): string {
  const line = command.split('\n').find((l) => l.trim() !== '') ?? command;
  return line.length > 160 ? `${line.slice(0, 157)}...` : line.trim();
}
