/**
 * A view that updates in place on a terminal (`hub rollout status --watch`):
 * on a TTY each new rendering replaces the previous one; elsewhere (a pipe,
 * a CI log) each change is one timestamped line, so a log reads as a
 * history rather than a pile of redrawn screens.
 */

/** Where a live view writes. */
export interface LiveViewStream {
  isTTY?: boolean;
  write(text: string): unknown;
}

/** Shows successive renderings of one thing. */
export class LiveView {
  #linesShown = 0;

  constructor(
    private readonly stream: LiveViewStream,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Shows `full` on a TTY (over the previous one), `line` with the time elsewhere. */
  show(full: string, line: string): void {
    if (this.stream.isTTY !== true) {
      this.stream.write(`${this.now().toISOString()} ${line}\n`);
      return;
    }
    // Up to the first line of the previous rendering, then clear to the end of the screen.
    const back = this.#linesShown > 0 ? `\x1b[${this.#linesShown}F\x1b[J` : '';
    this.stream.write(`${back}${full}\n`);
    this.#linesShown = full.split('\n').length;
  }
}
