import { Args, Flags } from '@oclif/core';
import { dump } from 'js-yaml';
import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { HubClient, type RolloutDocument } from '../../../hub-client/hub-client.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';

export default class HubRolloutGet extends BaseCommand<typeof HubRolloutGet> {
  static override summary = "Print a rollout's stored document (its current revision), as YAML or JSON.";
  static override description =
    'The document is self-contained: the manifests that spec.resourcesFrom named when it was applied are in ' +
    'spec.resources. It can be edited and applied again.';
  static override examples = [
    '<%= config.bin %> hub rollout get web > web-rollout.yaml',
    '<%= config.bin %> hub rollout get web -o json',
  ];
  static override args = { name: Args.string({ required: true, description: 'Rollout name.' }) };
  static override flags = {
    ...hubConfigFlags,
    output: Flags.string({ char: 'o', summary: 'Format of the document.', options: ['yaml', 'json'], default: 'yaml' }),
  };

  async run(): Promise<{ revision: number; document: RolloutDocument }> {
    const stored = await new HubClient(loadHubConfig(this.flags['hub-config'])).getRolloutDocument(this.args.name);
    if (this.flags.output === 'json') this.log(JSON.stringify(stored.document, null, 2));
    else this.log(`# revision ${stored.revision}\n${dump(stored.document, { lineWidth: -1 }).trimEnd()}`);
    return stored;
  }
}
