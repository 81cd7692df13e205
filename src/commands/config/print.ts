import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { renderConfigDefaults } from '../../cluster/config.js';

export default class ConfigPrint extends BaseCommand<typeof ConfigPrint> {
  static override summary = 'Print a default init or join configuration (init-defaults | join-defaults).';
  static override examples = ['<%= config.bin %> config print init-defaults > edgeadm.yaml'];
  static override args = {
    which: Args.string({ required: true, options: ['init-defaults', 'join-defaults'], description: 'Which defaults.' }),
  };

  async run(): Promise<{ yaml: string }> {
    const yaml = renderConfigDefaults(this.args.which === 'init-defaults' ? 'init' : 'join');
    this.log(yaml.trimEnd());
    return { yaml };
  }
}
