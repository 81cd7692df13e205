import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/hub-flags.js';
import { LiveView } from '../../../cli/live-view.js';
import { ExitCode } from '../../../errors.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { renderRolloutLine, renderRolloutStatus } from '../../../hub-client/rollout-table.js';
import { loadHubConfig } from '../../../hub/hub-config.js';
import type { RolloutStatusView } from '../../../rollout/api.js';

export default class HubRolloutStatus extends BaseCommand<typeof HubRolloutStatus> {
  static override summary = "Show a rollout's revision, waves, counts per state and summaries; --watch follows it.";
  static override description =
    'States of a cluster: waiting, held (an operator hold), offline-pending (its wave came while it was offline), ' +
    'applying, progressing, ready, failed. With --watch the status updates as it changes (one line per change when ' +
    `stdout is not a terminal) and the command ends with the rollout: exit 0 when it completes, ${ExitCode.RolloutHalted} ` +
    `when it halts (more clusters failed than its failure budget), ${ExitCode.RolloutAborted} when it is aborted. ` +
    'With --json, one document: the status view (with --watch, the last one), whatever the exit code.';
  static override examples = [
    '<%= config.bin %> hub rollout status web',
    '<%= config.bin %> hub rollout status web --clusters --json',
    '<%= config.bin %> hub rollout status web --watch && echo "web is everywhere"',
  ];
  static override args = { name: Args.string({ required: true, description: 'Rollout name.' }) };
  static override flags = {
    ...hubConfigFlags,
    watch: Flags.boolean({ char: 'w', summary: 'Follow the rollout until it completes, halts or is aborted.' }),
    clusters: Flags.boolean({ summary: 'Add one row per cluster.' }),
  };

  async run(): Promise<RolloutStatusView> {
    const client = new HubClient(loadHubConfig(this.flags['hub-config']));
    const options = { clusters: this.flags.clusters };
    if (!this.flags.watch) {
      const view = await client.rolloutStatus(this.args.name, options);
      this.log(renderRolloutStatus(view));
      return view;
    }
    const live = new LiveView(process.stdout);
    let last: RolloutStatusView | undefined;
    for await (const view of client.watchRollout(this.args.name, options)) {
      last = view;
      if (!this.jsonEnabled()) live.show(renderRolloutStatus(view), renderRolloutLine(view));
    }
    const final = last as RolloutStatusView;
    const exitCode = { halted: ExitCode.RolloutHalted, aborted: ExitCode.RolloutAborted }[final.state as string];
    if (exitCode === undefined) return final;
    if (this.jsonEnabled()) this.logJson(final);
    else this.logToStderr(`rollout ${final.name} ${final.state}${final.haltReason ? `: ${final.haltReason}` : ''}`);
    return this.exit(exitCode);
  }
}
