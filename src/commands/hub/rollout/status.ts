import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { LiveView } from '../../../cli/live-view.js';
import { ExitCode, ValidationError } from '../../../errors.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { pendingClusters, watchEndOf } from '../../../hub-client/rollout-watch-end.js';
import { renderRolloutLine, renderRolloutStatus } from '../../../hub-client/rollout-table.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';
import type { RolloutStatusView } from '../../../rollout/api.js';
import { parseGoDuration } from '../../../trust/duration.js';

export default class HubRolloutStatus extends BaseCommand<typeof HubRolloutStatus> {
  static override summary = "Show a rollout's revision, waves, counts per state and summaries; --watch follows it.";
  static override description =
    'States of a cluster: waiting, held (an operator hold; the row says who, since when and why), offline-pending ' +
    '(its wave came while it was offline; the row says when it was last seen), applying, progressing, ready, failed. ' +
    'With --watch the status updates as it changes (one line per change when stdout is not a terminal) and the ' +
    `command ends with the rollout: exit 0 when it completes, ${ExitCode.RolloutHalted} when it halts (more clusters ` +
    `failed than its failure budget), ${ExitCode.RolloutAborted} when it is aborted, ${ExitCode.RolloutPending} when ` +
    'it is done wherever reachable (every cluster ready or held but offline ones, which get the revision when they ' +
    `return; their count is printed), and ${ExitCode.RolloutWatchTimeout} when --timeout passes first. ` +
    'With --json, one document: the status view (with --watch, the last one), whatever the exit code.';
  static override examples = [
    '<%= config.bin %> hub rollout status web',
    '<%= config.bin %> hub rollout status web --clusters --json',
    '<%= config.bin %> hub rollout status web --watch && echo "web is everywhere"',
    '<%= config.bin %> hub rollout status web --watch --timeout 30m; [ $? -eq 7 ] && echo "web is everywhere reachable"',
  ];
  static override args = { name: Args.string({ required: true, description: 'Rollout name.' }) };
  static override flags = {
    ...hubConfigFlags,
    watch: Flags.boolean({
      char: 'w',
      summary: 'Follow the rollout until it completes, halts, is aborted or is done wherever reachable.',
    }),
    timeout: Flags.string({
      summary: 'With --watch: stop following after this long (Go duration such as 90s or 30m).',
      dependsOn: ['watch'],
    }),
    clusters: Flags.boolean({ summary: 'Add one row per cluster.' }),
  };

  async run(): Promise<RolloutStatusView> {
    const client = new HubClient(loadHubConfig(this.flags['hub-config']));
    const options = { clusters: this.flags.clusters };
    const timeoutMs = this.flags.timeout === undefined ? undefined : parseTimeout(this.flags.timeout);
    if (!this.flags.watch) {
      const view = await client.rolloutStatus(this.args.name, options);
      this.log(renderRolloutStatus(view, Date.now()));
      return view;
    }
    const live = new LiveView(process.stdout);
    const signal = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
    let last: RolloutStatusView | undefined;
    for await (const view of client.watchRollout(this.args.name, { ...options, ...(signal && { signal }) })) {
      last = view;
      if (!this.jsonEnabled()) live.show(renderRolloutStatus(view, Date.now()), renderRolloutLine(view));
    }
    const final = last ?? (await client.rolloutStatus(this.args.name, options));
    const end = watchEndOf(final);
    if (end === 'complete') return final;
    const exitCode =
      end === undefined
        ? ExitCode.RolloutWatchTimeout
        : {
            halted: ExitCode.RolloutHalted,
            aborted: ExitCode.RolloutAborted,
            'done-where-reachable': ExitCode.RolloutPending,
          }[end];
    if (this.jsonEnabled()) this.logJson(final);
    else this.logToStderr(endLine(final, end, this.flags.timeout));
    return this.exit(exitCode);
  }
}

function parseTimeout(text: string): number {
  const ms = parseGoDuration(text);
  if (ms <= 0) {
    throw new ValidationError(`--timeout must be longer than 0 (it is ${JSON.stringify(text)})`, {
      code: 'E_DURATION_INVALID',
    });
  }
  return ms;
}

function endLine(view: RolloutStatusView, end: ReturnType<typeof watchEndOf>, timeout: string | undefined): string {
  if (end === 'done-where-reachable') {
    const pending = pendingClusters(view);
    return `rollout ${view.name} is done wherever reachable; ${pending} cluster${pending === 1 ? '' : 's'} pending (offline), sent the revision when they return`;
  }
  if (end === undefined) return `rollout ${view.name} is still ${view.state} after ${timeout ?? 'the timeout'}`;
  return `rollout ${view.name} ${view.state}${view.haltReason ? `: ${view.haltReason}` : ''}`;
}
