/**
 * Container logs for the simulated API server. No container runs, so a test
 * writes the log lines itself (`appendPodLog`) and `GET …/pods/<name>/log`
 * serves them; with `follow=true` the response stays open and carries each
 * new line as it is appended, until the log is ended or the pod deleted.
 * Each container keeps a bounded number of lines, like a rotated log file.
 */

/** Default number of lines kept per container. */
export const DEFAULT_LOG_LINES_LIMIT = 10_000;

interface LogLine {
  time: string;
  text: string;
}

interface ContainerLog {
  lines: LogLine[];
  followers: Set<(line: LogLine | undefined) => void>;
  isEnded: boolean;
}

/** Options of one log read. */
export interface LogReadOptions {
  tailLines?: number;
  timestamps?: boolean;
}

/** What a follower receives: a formatted line, or `undefined` when the log ends. */
export type LogListener = (chunk: string | undefined) => void;

function format(line: LogLine, timestamps: boolean): string {
  return timestamps ? `${line.time} ${line.text}\n` : `${line.text}\n`;
}

/** Per-pod, per-container log buffers with followers. */
export class PodLogs {
  readonly #logs = new Map<string, ContainerLog>();
  readonly #linesLimit: number;

  constructor(linesLimit = DEFAULT_LOG_LINES_LIMIT) {
    this.#linesLimit = linesLimit;
  }

  #key(namespace: string, pod: string, container: string): string {
    return `${namespace}/${pod}/${container}`;
  }

  #log(namespace: string, pod: string, container: string): ContainerLog {
    const key = this.#key(namespace, pod, container);
    let log = this.#logs.get(key);
    if (!log) {
      log = { lines: [], followers: new Set(), isEnded: false };
      this.#logs.set(key, log);
    }
    return log;
  }

  /** Appends one line (without its newline) to a container's log and hands it to followers. */
  append(namespace: string, pod: string, container: string, text: string): void {
    const log = this.#log(namespace, pod, container);
    const line = { time: new Date().toISOString(), text };
    log.lines.push(line);
    if (log.lines.length > this.#linesLimit) log.lines.splice(0, log.lines.length - this.#linesLimit);
    for (const follower of log.followers) follower(line);
  }

  /** The log as one text, honouring `tailLines` and `timestamps`. */
  read(namespace: string, pod: string, container: string, options: LogReadOptions = {}): string {
    const lines = this.#log(namespace, pod, container).lines;
    const selected =
      options.tailLines !== undefined ? lines.slice(Math.max(0, lines.length - options.tailLines)) : lines;
    return selected.map((l) => format(l, options.timestamps ?? false)).join('');
  }

  /** Whether the container's log has been ended (a follow ends at once). */
  isEnded(namespace: string, pod: string, container: string): boolean {
    return this.#log(namespace, pod, container).isEnded;
  }

  /** Calls `listener` with each later line, then with `undefined` when the log ends; returns the unsubscribe function. */
  follow(
    namespace: string,
    pod: string,
    container: string,
    listener: LogListener,
    options: LogReadOptions = {},
  ): () => void {
    const log = this.#log(namespace, pod, container);
    const follower = (line: LogLine | undefined): void =>
      listener(line ? format(line, options.timestamps ?? false) : undefined);
    log.followers.add(follower);
    return () => log.followers.delete(follower);
  }

  /** Ends a container's log: followers get the end, later follows return at once. */
  end(namespace: string, pod: string, container: string): void {
    const log = this.#log(namespace, pod, container);
    log.isEnded = true;
    for (const follower of [...log.followers]) follower(undefined);
    log.followers.clear();
  }

  /** Ends and forgets every container log of a pod (the pod was deleted). */
  forgetPod(namespace: string, pod: string): void {
    const prefix = `${namespace}/${pod}/`;
    for (const [key, log] of this.#logs) {
      if (!key.startsWith(prefix)) continue;
      for (const follower of [...log.followers]) follower(undefined);
      this.#logs.delete(key);
    }
  }
}
