/**
 * BaseCommand: what every edgeadm command shares.
 *
 * - Global flags: `--json` (exactly one JSON document on stdout, success or
 *   failure), `--verbose` (debug lines on stderr) and `--log-file`; and on
 *   the long-running commands `--output jsonl` (flags/output-flag.ts): one event
 *   per line on stdout, ending with a `result` line, text on stderr.
 * - A redacting run log per command under `$EDGEADM_HOME/logs`.
 * - The one place where errors become output and an exit code (kubeadm's:
 *   1 general, 2 preflight, 3 validation).
 *
 * Subclasses implement `run()`, which returns the result object used for
 * `--json`, and print human output with `this.log` / `this.logToStderr`.
 */
import { Command, Errors, Flags, type Interfaces } from '@oclif/core';
import type { ChalkInstance } from 'chalk';
import { ValidationError, type EdgeadmError } from '../errors.js';
import { Redactor } from '../log/redact.js';
import { RunLog, silentLogger, type Logger } from '../log/run-log.js';
import { openCommandRunLog } from './command-run-log.js';
import { displayId, errorDocument, renderErrorText, toEdgeadmError, usageError } from './render-error.js';
import { styleFor } from './style.js';
import type { WorkflowEventSink } from '../workflow/events.js';

export type BaseFlags<T extends typeof Command> = Interfaces.InferredFlags<
  (typeof BaseCommand)['baseFlags'] & T['flags']
>;
export type BaseArgs<T extends typeof Command> = Interfaces.InferredArgs<T['args']>;

/** Flag names whose values are secrets: registered with the redactor on parse. */
const SECRET_FLAG = /(password|passphrase|secret|token)$/i;

/** oclif's own --json says only "Format output as json."; this one says what the document is. */
const jsonBaseFlag = {
  json: Flags.boolean({
    summary: 'Print exactly one JSON document on stdout: the result, or {"error": {code, message, hints}}.',
    helpGroup: 'GLOBAL',
  }),
};

/**
 * --verbose and --log-file, which every command takes: the global flags of
 * commands with `enableJsonFlag = false`, whose output is not a document.
 */
export const baseFlagsWithoutJson = {
  verbose: Flags.boolean({
    summary: 'Print debug detail on stderr as the command runs.',
    helpGroup: 'GLOBAL',
  }),
  'log-file': Flags.string({
    summary: 'Write the run log to this file instead of $EDGEADM_HOME/logs.',
    helpGroup: 'GLOBAL',
  }),
};

export abstract class BaseCommand<T extends typeof Command> extends Command {
  static override enableJsonFlag = true;

  static override baseFlags: typeof baseFlagsWithoutJson & Partial<typeof jsonBaseFlag> = {
    ...jsonBaseFlag,
    ...baseFlagsWithoutJson,
  };

  protected flags!: BaseFlags<T>;
  protected args!: BaseArgs<T>;
  /** Shared by the run log, error rendering and any subprocess output we echo. */
  protected readonly redactor = new Redactor();
  #runLog: RunLog | undefined;

  /** The run log, as the {@link Logger} that domain code takes. */
  protected get logger(): Logger {
    return this.#runLog ?? silentLogger;
  }

  /** Styling for stdout (colour only on a TTY, never with NO_COLOR). */
  protected get style(): ChalkInstance {
    return styleFor(process.stdout);
  }

  /** `--output jsonl`: stdout carries events, one JSON object per line (see flags/output-flag.ts). */
  protected get isJsonl(): boolean {
    return (this.flags as { output?: string } | undefined)?.output === 'jsonl';
  }

  /** Whether stdout is for programs (`--json` or `--output jsonl`): no progress display there. */
  public isStdoutForPrograms(): boolean {
    return this.jsonEnabled() || this.isJsonl;
  }

  /**
   * Writes one event line under `--output jsonl`, redacted; nothing otherwise.
   * `time` is added when the event has none.
   */
  public emitEvent(event: { type: string; time?: string } & Record<string, unknown>): void {
    if (!this.isJsonl) return;
    const { type, time, ...rest } = event;
    const line = { type, time: time ?? new Date().toISOString(), ...rest };
    process.stdout.write(`${JSON.stringify(this.redactor.redactValue(line))}\n`);
  }

  /**
   * Where a cluster workflow (init, join, reset, upgrade) reports: the run
   * log, its progress lines on stderr, and its phase events as lines under
   * `--output jsonl`.
   */
  protected get workflowOutput(): {
    logger: Logger;
    onLine(line: string): void;
    onWarning(line: string): void;
    onEvent: WorkflowEventSink;
  } {
    return {
      logger: this.logger,
      onLine: (line) => {
        this.logger.info(line);
        this.logToStderr(line);
      },
      onWarning: (line) => this.warnAlways(line),
      onEvent: (event) => this.emitEvent({ ...event }),
    };
  }

  /**
   * A warning a person must see whatever the output mode: the run log echoes
   * warnings on stderr (`warning: …`), also under `--json` and `--output
   * jsonl`, which own stdout only; progress lines (`onLine`) are not shown
   * there. Used for what weakens a guarantee, such as an install package
   * whose origin is not checked.
   */
  public warnAlways(line: string): void {
    this.logger.warn(line);
  }

  /** Text for people: stdout, or stderr when stdout carries events. */
  public override log(message?: string, ...args: unknown[]): void {
    if (this.isJsonl) this.logToStderr(message, ...args);
    else super.log(message, ...args);
  }

  /** Runs the command; under `--output jsonl` its result is the last line. */
  protected override async _run<R>(): Promise<R> {
    const result = await super._run<R>();
    if (this.isJsonl) this.emitEvent({ type: 'result', ok: true, result });
    return result;
  }

  public override async init(): Promise<void> {
    await super.init();
    const ctor = this.ctor as typeof BaseCommand;
    // Whatever the flag parser throws is a usage error, also its plain
    // Errors ("Flag --host expects a value"), never an internal one.
    const { args, flags } = await this.parse({
      flags: ctor.flags,
      baseFlags: ctor.baseFlags,
      enableJsonFlag: ctor.enableJsonFlag,
      args: ctor.args,
      strict: ctor.strict,
    }).catch((error: unknown) => {
      throw usageError(error, this.id);
    });
    this.flags = flags as BaseFlags<T>;
    this.args = args as BaseArgs<T>;
    for (const [name, value] of Object.entries(flags)) {
      if (SECRET_FLAG.test(name)) for (const v of [value].flat()) if (typeof v === 'string') this.redactor.addSecret(v);
    }
    this.#openRunLog(this.flags['log-file'], this.flags.verbose);
    if (this.isJsonl && this.jsonEnabled()) {
      throw new ValidationError('--json and --output jsonl do not go together: choose one', {
        code: 'E_FLAG_CONFLICT',
        hints: ['--json prints one document at the end; --output jsonl prints one event per line as they happen.'],
      });
    }
  }

  public override async catch(error: Error & { exitCode?: number }): Promise<never> {
    if (error instanceof Errors.ExitError) throw error;
    const failure = toEdgeadmError(error, this.id);
    if (!this.#runLog) this.#openRunLogQuietly();
    this.logger.error(`${failure.code}: ${failure.message}`);
    const cause = failure.cause ?? failure;
    if (cause instanceof Error && cause.stack) this.logger.debug(cause.stack);
    const logFile = this.#runLog?.path;
    if (this.jsonEnabled()) {
      this.logJson(errorDocument(failure, this.redactor, logFile));
    } else {
      // Under --output jsonl the failure ends the events too; people read it on stderr.
      if (this.isJsonl)
        this.emitEvent({ type: 'result', ok: false, ...errorDocument(failure, this.redactor, logFile) });
      process.stderr.write(`${renderErrorText(failure, this.redactor, styleFor(process.stderr), logFile)}\n`);
    }
    throw new Errors.ExitError(failure.exitCode);
  }

  public override async finally(error: Error | undefined): Promise<void> {
    if (error === undefined) this.#runLog?.info('done');
    this.#runLog?.close();
    await super.finally(error);
  }

  /** Exactly one JSON document, uncoloured, on stdout. */
  public override logJson(json: unknown): void {
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  }

  /** Throws a typed error; never returns. Kept for symmetry with oclif's `error()`. */
  protected fail(error: EdgeadmError): never {
    throw error;
  }

  #openRunLog(file: string | undefined, verbose: boolean): void {
    this.#runLog = openCommandRunLog({ commandId: this.id ?? 'edgeadm', file, verbose, redactor: this.redactor });
    this.#runLog.info(`edgeadm ${this.config.version} ${displayId(this.id ?? '')} ${this.argv.join(' ')}`.trim());
  }

  /** For failures before init() finished (bad flags): log if we can, never fail again. */
  #openRunLogQuietly(): void {
    try {
      this.#runLog = RunLog.open({ commandId: this.id ?? 'edgeadm', redactor: this.redactor });
      this.#runLog.info(`edgeadm ${this.config.version} ${displayId(this.id ?? '')} ${this.argv.join(' ')}`.trim());
    } catch {
      this.#runLog = undefined;
    }
  }
}
