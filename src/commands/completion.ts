import { Args } from '@oclif/core';
import { BaseCommand, baseFlagsWithoutJson } from '../cli/base-command.js';
import { COMPLETION_SHELLS, completionScript, type CompletionShell } from '../cli/completion.js';

export default class Completion extends BaseCommand<typeof Completion> {
  static override summary = 'Print a shell completion script for bash or zsh.';
  static override description =
    'Load it in the current shell with `source <(edgeadm completion bash)`, or keep it, as kubeadm completion does: `edgeadm completion bash > /etc/bash_completion.d/edgeadm`.';
  static override examples = [
    'source <(<%= config.bin %> completion bash)',
    '<%= config.bin %> completion bash > /etc/bash_completion.d/edgeadm',
    '<%= config.bin %> completion zsh > "${fpath[1]}/_edgeadm"',
  ];
  static override enableJsonFlag = false;
  static override baseFlags = baseFlagsWithoutJson;
  static override args = {
    shell: Args.string({ description: 'The shell: bash or zsh.', options: [...COMPLETION_SHELLS], required: true }),
  };

  async run(): Promise<void> {
    const commands = this.config.commands
      .filter((command) => !command.hidden)
      .map((command) => ({ id: command.id, flags: Object.keys(command.flags).filter((f) => f !== 'help') }));
    process.stdout.write(completionScript(this.args.shell as CompletionShell, commands));
  }
}
