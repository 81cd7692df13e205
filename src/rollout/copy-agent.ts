/**
 * The agent's side of rollouts: it holds the copies its cluster runs,
 * applies each one (with {@link CopyApplier}) as the rollout's owner,
 * watches it become ready, and reports to the hub. It serves the three
 * rollout control streams of wire.ts; the tunnel agent routes them here
 * (see {@link CopyAgent.controlRoutes}) and knows nothing else about them.
 *
 * - Apply: the message is read (at most {@link MAX_COPY_MESSAGE_BYTES},
 *   else 413), parsed (400 when it is not a copy message) and answered 202;
 *   the apply runs afterwards. Copies of one rollout are applied one at a
 *   time, and a newer one (the later stream) supersedes an older one still
 *   waiting or being applied: only the latest is applied to the end.
 * - Identity: the objects are applied and read as the owner the message
 *   names (`Impersonate-User` / `-Group` on the agent's own credentials, as
 *   user streams are), so the cluster's RBAC decides what a rollout may do;
 *   the inventory ConfigMaps in kube-system are kept by the agent as
 *   itself, so that an owner needs no rights there (agent-rbac.ts grants
 *   the agent that one Role).
 * - Readiness: an applied copy is read back from the API server every
 *   {@link COPY_POLL_NOT_READY_MS} until it is ready, then every
 *   {@link COPY_POLL_READY_MS}. A report line is written when the copy's
 *   readiness, message, revision or any object's `.status` changes.
 * - Failures: an apply the API server refuses (RBAC, an invalid object) is
 *   reported `failed` at the copy's revision with the server's message and
 *   not retried; an API server that cannot be reached is retried. Every
 *   request has a deadline ({@link COPY_REQUEST_DEADLINE_MS}): one that
 *   hangs counts as unreachable, so no copy waits on it for good.
 * - Reports: one stream at a time (a new one ends the old). It starts with
 *   the current report of every copy, then a line per change. A reader that
 *   does not read holds back nothing but its own stream: lines wait as the
 *   latest report per rollout (a newer one replaces an unwritten older
 *   one), so what the agent keeps is bounded by the number of rollouts.
 *   A hub that acknowledges lines (wire.ts) gets each rollout's latest
 *   line again until it has acknowledged it ({@link REPORT_RESEND_MS}).
 * - Restart: what the agent runs is rebuilt from the inventories on its
 *   cluster (owner and revision recorded there), so reports continue
 *   without the hub sending the copies again.
 */
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { KubeApiError, KubeClient } from '../kube/client.js';
import type { KubeCredentials } from '../kube/kubeconfig.js';
import type { Logger } from '../log/run-log.js';
import { CopyApplier, CopyObjectError } from './apply-copy.js';
import { answer, parseBody, parseCopyMessage, parseRemoveMessage, ReadBudget, readMessage } from './copy-messages.js';
import {
  COPY_APPLY_RETRY_MS,
  COPY_POLL_NOT_READY_MS,
  COPY_POLL_READY_MS,
  COPY_REQUEST_DEADLINE_MS,
  MAX_COPY_BYTES_IN_FLIGHT,
  MAX_REMOVE_MESSAGE_BYTES,
  REPORT_RESEND_MS,
} from './limits.js';
import { ReportSink } from './report-sink.js';
import {
  MAX_COPY_MESSAGE_BYTES,
  MAX_REPORT_ACK_LINE_BYTES,
  ROLLOUT_APPLY_PATH,
  ROLLOUT_REPORT_ACKS_HEADER,
  ROLLOUT_REMOVE_PATH,
  ROLLOUT_REPORTS_PATH,
  type CopyMessage,
  type RemoveMessage,
  type ReportedObject,
  type ReportMessage,
  type RolloutOwner,
} from './wire.js';

/** A control stream the tunnel agent routes to a handler: method, path and the handler. */
export interface ControlRoute {
  method: 'GET' | 'POST';
  path: string;
  handle(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Promise<void>;
}

/** Options of a {@link CopyAgent}. */
export interface CopyAgentOptions {
  /** The cluster the agent serves: what its reports name. */
  cluster: string;
  /** The agent's own credentials for its API server (it impersonates owners with them). */
  credentials: KubeCredentials;
  logger: Logger;
  /** Read-back intervals; {@link COPY_POLL_NOT_READY_MS} and {@link COPY_POLL_READY_MS} by default. */
  pollNotReadyMs?: number;
  pollReadyMs?: number;
  /** Delay before an apply is tried again after its API server could not be reached. */
  applyRetryMs?: number;
  /** Most bytes of messages read at once; {@link MAX_COPY_BYTES_IN_FLIGHT} by default. */
  maxBytesInFlight?: number;
  /** The deadline of each request to the API server; {@link COPY_REQUEST_DEADLINE_MS} by default. */
  requestDeadlineMs?: number;
  /** How long a report line waits for the hub's acknowledgement; {@link REPORT_RESEND_MS} by default. */
  reportResendMs?: number;
}

/** What one job of a rollout's worker is. */
type Job =
  { kind: 'apply'; message: CopyMessage; seq: number } | { kind: 'remove'; message: RemoveMessage; seq: number };

/** One rollout on this cluster, as the agent runs it. */
interface CopyRun {
  rollout: string;
  owner: RolloutOwner | undefined;
  /** The revision of the copy last accepted (what failures quote). */
  revision: string;
  /** applying: a copy is on its way in; applied: it is read back; failed: the server refused it. */
  state: 'applying' | 'applied' | 'failed' | 'removing';
  /** Sequence number of the last message accepted: an older one arriving later is dropped. */
  seq: number;
  pending: Job | undefined;
  isWorking: boolean;
  abort: AbortController | undefined;
  timer: NodeJS.Timeout | undefined;
  applier: { key: string; client: KubeClient; applier: CopyApplier } | undefined;
  /** The last report published, and its serialization (to publish changes only). */
  last: ReportMessage | undefined;
  lastKey: string | undefined;
}

/** Holds, applies, watches and reports the rollout copies of one cluster. */
export class CopyAgent {
  readonly #options: CopyAgentOptions;
  readonly #runs = new Map<string, CopyRun>();
  /** `removed` lines not yet handed to a report stream. */
  readonly #removed = new Map<string, ReportMessage>();
  readonly #inventory: CopyApplier;
  readonly #budget: ReadBudget;
  #seq = 0;
  #sink: ReportSink | undefined;
  #adopted: Promise<boolean> | undefined;
  #isClosed = false;

  constructor(options: CopyAgentOptions) {
    this.#options = options;
    this.#budget = new ReadBudget(options.maxBytesInFlight ?? MAX_COPY_BYTES_IN_FLIGHT);
    this.#inventory = new CopyApplier(new KubeClient(options.credentials, this.#clientOptions()));
  }

  /** Every request of the agent has a deadline: one that hangs would hold its copy "applying" for good. */
  #clientOptions(): { isKeepAlive: true; requestDeadlineMs: number } {
    return { isKeepAlive: true, requestDeadlineMs: this.#options.requestDeadlineMs ?? COPY_REQUEST_DEADLINE_MS };
  }

  /** The control streams this agent serves, for the tunnel agent to route. */
  controlRoutes(): ControlRoute[] {
    return [
      { method: 'POST', path: ROLLOUT_APPLY_PATH, handle: (stream, headers) => this.#serveApply(stream, headers) },
      { method: 'POST', path: ROLLOUT_REMOVE_PATH, handle: (stream, headers) => this.#serveRemove(stream, headers) },
      {
        method: 'GET',
        path: ROLLOUT_REPORTS_PATH,
        handle: async (stream, headers) => this.#serveReports(stream, headers),
      },
    ];
  }

  /** The rollouts the agent runs now and the revision each was last sent (for tests and logs). */
  running(): Array<{ rollout: string; revision: string; state: CopyRun['state'] }> {
    return [...this.#runs.values()].map((run) => ({ rollout: run.rollout, revision: run.revision, state: run.state }));
  }

  /** Stops polling and applying, and ends the report stream. */
  close(): void {
    this.#isClosed = true;
    for (const run of this.#runs.values()) {
      clearTimeout(run.timer);
      run.abort?.abort();
      run.pending = undefined;
      run.applier?.client.close();
    }
    this.#inventory.inventoryClient.close();
    this.#sink?.end();
    this.#sink = undefined;
  }

  async #serveApply(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Promise<void> {
    // Numbered on arrival, so a newer copy wins even when an older, larger one finishes reading later.
    const seq = ++this.#seq;
    const text = await readMessage(stream, headers, MAX_COPY_MESSAGE_BYTES, this.#budget);
    if (text === undefined) return;
    const parsed = parseBody(text, parseCopyMessage);
    if (!parsed.ok) {
      answer(stream, 400, { message: parsed.message });
      return;
    }
    answer(stream, 202);
    this.#accept({ kind: 'apply', message: parsed.value, seq });
  }

  async #serveRemove(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Promise<void> {
    const seq = ++this.#seq;
    const text = await readMessage(stream, headers, MAX_REMOVE_MESSAGE_BYTES, this.#budget);
    if (text === undefined) return;
    const parsed = parseBody(text, parseRemoveMessage);
    if (!parsed.ok) {
      answer(stream, 400, { message: parsed.message });
      return;
    }
    answer(stream, 202);
    this.#accept({ kind: 'remove', message: parsed.value, seq });
  }

  #serveReports(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    this.#sink?.end();
    stream.respond({ ':status': 200, 'content-type': 'application/x-ndjson' });
    const isAcked = headers[ROLLOUT_REPORT_ACKS_HEADER] === '1';
    const sink = new ReportSink(stream, { isAcked });
    this.#sink = sink;
    let resend: NodeJS.Timeout | undefined;
    if (isAcked) {
      // A line the hub has not taken (lost with a stream that broke under it, say) is written again.
      resend = setInterval(() => sink.resendUnacknowledged(), this.#options.reportResendMs ?? REPORT_RESEND_MS);
      resend.unref();
      readAcks(stream, (seq) => sink.ack(seq));
    } else {
      // Whatever a hub without acknowledgements sends on this stream is not read: drop it.
      stream.resume();
    }
    stream.on('close', () => {
      clearInterval(resend);
      if (this.#sink === sink) this.#sink = undefined;
    });
    for (const message of this.#removed.values()) sink.offer(message);
    this.#removed.clear();
    for (const run of this.#runs.values()) if (run.last !== undefined) sink.offer(run.last);
    void this.#adopt();
  }

  /**
   * Rebuilds what the agent runs from the inventories on its cluster (once;
   * again at the next report stream if the API server could not be asked).
   */
  #adopt(): Promise<boolean> {
    this.#adopted ??= this.#inventory.inventories().then(
      (records) => {
        for (const record of records) {
          if (this.#runs.has(record.rollout) || this.#isClosed) continue;
          const run = this.#newRun(record.rollout, record.owner, record.revision ?? '');
          run.state = 'applied';
          this.#runs.set(record.rollout, run);
          this.#options.logger.info(`rollout ${record.rollout}: runs revision ${run.revision || '(unknown)'}`);
          this.#schedule(run, 0);
        }
        return true;
      },
      (error: Error) => {
        this.#options.logger.warn(`cannot read the rollout inventories: ${error.message}`);
        this.#adopted = undefined;
        return false;
      },
    );
    return this.#adopted;
  }

  #newRun(rollout: string, owner: RolloutOwner | undefined, revision: string): CopyRun {
    return {
      rollout,
      owner,
      revision,
      state: 'applying',
      seq: 0,
      pending: undefined,
      isWorking: false,
      abort: undefined,
      timer: undefined,
      applier: undefined,
      last: undefined,
      lastKey: undefined,
    };
  }

  #accept(job: Job): void {
    if (this.#isClosed) return;
    const { rollout } = job.message;
    let run = this.#runs.get(rollout);
    if (run === undefined) {
      run = this.#newRun(rollout, job.message.owner, job.kind === 'apply' ? job.message.copy.revision : '');
      this.#runs.set(rollout, run);
    }
    if (job.seq < run.seq) {
      this.#options.logger.debug(`rollout ${rollout}: an older message arrived after a newer one; dropped`);
      return;
    }
    run.seq = job.seq;
    run.pending = job;
    this.#removed.delete(rollout);
    clearTimeout(run.timer);
    run.timer = undefined;
    // A newer copy supersedes the one being applied: it stops between two objects.
    run.abort?.abort();
    void this.#work(run);
  }

  async #work(run: CopyRun): Promise<void> {
    if (run.isWorking) return;
    run.isWorking = true;
    try {
      while (run.pending !== undefined && !this.#isClosed) {
        const job = run.pending;
        run.pending = undefined;
        if (job.kind === 'apply') await this.#apply(run, job);
        else await this.#remove(run, job);
      }
    } finally {
      run.isWorking = false;
    }
  }

  #applierFor(run: CopyRun, owner: RolloutOwner): CopyApplier {
    const key = JSON.stringify(owner);
    if (run.applier?.key !== key) {
      run.applier?.client.close();
      // On the inventory client's connections: one keep-alive pool per cluster, whoever the owners are.
      const client = this.#inventory.inventoryClient.impersonating(owner);
      run.applier = { key, client, applier: new CopyApplier(client, { inventory: this.#inventory.inventoryClient }) };
    }
    return run.applier.applier;
  }

  async #apply(run: CopyRun, job: Extract<Job, { kind: 'apply' }>): Promise<void> {
    const { rollout, owner, copy } = job.message;
    // The copy it already runs, sent again (the hub redelivers when a tunnel comes back): applied
    // again quietly, so that a ready copy does not read as progressing meanwhile.
    const isRunningIt = run.state === 'applied' && run.revision === copy.revision && run.last !== undefined;
    run.owner = owner;
    run.revision = copy.revision;
    run.state = 'applying';
    if (!isRunningIt) {
      this.#publishCopy(run, { readiness: 'progressing', message: `applying revision ${copy.revision}` }, []);
    }
    const abort = new AbortController();
    run.abort = abort;
    try {
      const result = await this.#applierFor(run, owner).apply(rollout, copy, { owner, signal: abort.signal });
      this.#options.logger.info(
        `rollout ${rollout}: applied revision ${copy.revision} (${result.applied} object${result.applied === 1 ? '' : 's'}, ${result.pruned} pruned)`,
      );
      run.state = 'applied';
      this.#schedule(run, 0);
    } catch (error) {
      if (abort.signal.aborted) return; // a newer message is pending
      if (isRefusal(error)) {
        run.state = 'failed';
        const message = `revision ${copy.revision} was not applied: ${(error as Error).message}`;
        this.#options.logger.warn(`rollout ${rollout}: ${message}`);
        this.#publishCopy(run, { readiness: 'failed', message }, []);
        return;
      }
      this.#options.logger.warn(
        `rollout ${rollout}: applying revision ${copy.revision} failed, will retry: ${(error as Error).message}`,
      );
      this.#publishCopy(
        run,
        {
          readiness: 'progressing',
          message: `applying revision ${copy.revision}: ${(error as Error).message}; retrying`,
        },
        [],
      );
      run.timer = setTimeout(() => {
        run.timer = undefined;
        if (run.pending === undefined && run.seq === job.seq) {
          run.pending = job;
          void this.#work(run);
        }
      }, this.#options.applyRetryMs ?? COPY_APPLY_RETRY_MS);
      run.timer.unref();
    } finally {
      if (run.abort === abort) run.abort = undefined;
    }
  }

  async #remove(run: CopyRun, job: Extract<Job, { kind: 'remove' }>): Promise<void> {
    const { rollout, owner } = job.message;
    run.state = 'removing';
    clearTimeout(run.timer);
    try {
      const pruned = await this.#applierFor(run, owner).remove(rollout);
      this.#options.logger.info(`rollout ${rollout}: removed (${pruned} object${pruned === 1 ? '' : 's'} deleted)`);
    } catch (error) {
      // The inventory stays, so the hub's next remove tries again.
      run.state = 'failed';
      const message = `removing the rollout failed: ${(error as Error).message}`;
      this.#options.logger.warn(`rollout ${rollout}: ${message}`);
      this.#publishCopy(run, { readiness: 'failed', message }, []);
      return;
    }
    if (run.pending !== undefined) return; // a copy arrived meanwhile: it is applied next
    this.#runs.delete(rollout);
    run.applier?.client.close();
    const removed: ReportMessage = { kind: 'removed', rollout, cluster: this.#options.cluster };
    if (this.#sink?.isOpen === true) this.#sink.offer(removed);
    else this.#removed.set(rollout, removed);
  }

  #schedule(run: CopyRun, delayMs: number): void {
    clearTimeout(run.timer);
    if (this.#isClosed) return;
    run.timer = setTimeout(() => {
      run.timer = undefined;
      void this.#poll(run);
    }, delayMs);
    run.timer.unref();
  }

  async #poll(run: CopyRun): Promise<void> {
    if (run.state !== 'applied' || run.isWorking || this.#runs.get(run.rollout) !== run) return;
    const seq = run.seq;
    let isReady = false;
    try {
      if (run.owner === undefined) {
        this.#publishCopy(
          run,
          {
            readiness: 'progressing',
            message: 'the inventory records no owner to read the objects as; waiting for the copy',
          },
          [],
        );
        return;
      }
      const readBack = await this.#applierFor(run, run.owner).readBack(run.rollout, this.#options.cluster);
      // A message that arrived while reading makes this read stale.
      if (run.seq !== seq || run.state !== 'applied') return;
      if (readBack === undefined) {
        this.#publishCopy(run, { readiness: 'progressing', message: 'the inventory of this rollout is gone' }, []);
      } else {
        isReady = readBack.report.readiness === 'ready';
        this.#publish(run, { kind: 'copy', rollout: run.rollout, ...readBack.report, objects: readBack.objects });
      }
    } catch (error) {
      this.#options.logger.debug(`rollout ${run.rollout}: reading the copy back failed: ${(error as Error).message}`);
      // The API server refused the read (the owner lost the right to read it): the hub is told; an
      // unreachable API server is not news for the hub, and the next read will tell.
      if (isRefusal(error) && run.seq === seq) {
        this.#publishCopy(
          run,
          { readiness: 'progressing', message: `cannot read the copy back: ${(error as Error).message}` },
          [],
        );
      }
    } finally {
      if (run.seq === seq && run.state === 'applied' && run.owner !== undefined) {
        this.#schedule(
          run,
          isReady
            ? (this.#options.pollReadyMs ?? COPY_POLL_READY_MS)
            : (this.#options.pollNotReadyMs ?? COPY_POLL_NOT_READY_MS),
        );
      }
    }
  }

  /** Publishes a report the agent states itself (applying, failed), quoting the revision it was sent. */
  #publishCopy(
    run: CopyRun,
    status: { readiness: 'progressing' | 'failed'; message: string },
    objects: ReportedObject[],
  ): void {
    this.#publish(run, {
      kind: 'copy',
      rollout: run.rollout,
      cluster: this.#options.cluster,
      revision: run.revision,
      readiness: status.readiness,
      message: status.message,
      objects,
    });
  }

  #publish(run: CopyRun, message: ReportMessage): void {
    const key = JSON.stringify(message);
    if (key === run.lastKey) return;
    run.last = message;
    run.lastKey = key;
    if (this.#sink?.isOpen === true) this.#sink.offer(message);
  }
}

/**
 * Reads the hub's acknowledgement lines ({"ack":N}) from the report
 * stream; a line longer than {@link MAX_REPORT_ACK_LINE_BYTES} or not an
 * acknowledgement is dropped. Holds at most one line.
 */
function readAcks(stream: ServerHttp2Stream, onAck: (seq: number) => void): void {
  let pending = '';
  let isDropping = false;
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = chunk.split('\n');
    const last = parts.pop() ?? '';
    for (const part of parts) {
      const line = isDropping ? '' : pending + part;
      pending = '';
      isDropping = false;
      if (line.length > MAX_REPORT_ACK_LINE_BYTES) continue;
      try {
        const ack = (JSON.parse(line) as { ack?: unknown }).ack;
        if (typeof ack === 'number' && Number.isSafeInteger(ack)) onAck(ack);
      } catch {
        // Not an acknowledgement: dropped.
      }
    }
    if (isDropping) return;
    pending += last;
    if (pending.length > MAX_REPORT_ACK_LINE_BYTES) {
      pending = '';
      isDropping = true;
    }
  });
}

/** A failure the cluster will not heal by itself: the API server refused the request, or the copy names a bad path. */
function isRefusal(error: unknown): boolean {
  if (error instanceof CopyObjectError) return true;
  if (error instanceof KubeApiError) return error.status >= 400 && error.status < 500 && error.status !== 429;
  return false;
}
