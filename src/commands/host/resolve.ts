import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { renderHostResolve } from '../../cli/render-host-resolve.js';
import { resolveHost, type HostResolution } from '../../hosts/host-resolve.js';

export default class HostResolve extends BaseCommand<typeof HostResolve> {
  static override summary = 'Print how a host is reached through the ssh config, without connecting.';
  static override description =
    'Resolves HOST as ssh -G does (Host and Match blocks, Include, HostName, User, Port, IdentityFile, ProxyJump) ' +
    'and prints the user, address, port and key files in order, then every jump host of the chain resolved the same way.';
  static override examples = [
    '<%= config.bin %> host resolve store-042 --ssh-config examples/ssh_config',
    '<%= config.bin %> host resolve admin@store-7:2201 --ssh-config examples/ssh_config --json',
    '<%= config.bin %> host resolve 10.0.0.9 --ssh-config examples/ssh_config --ssh-jump ops@bastion.example.com',
  ];
  static override args = {
    host: Args.string({
      required: true,
      description: 'The host as you would type it for ssh: [user@]host[:port] or an alias.',
    }),
  };
  static override flags = {
    'ssh-config': Flags.string({ summary: 'ssh config file. Default: ~/.ssh/config.' }),
    'ssh-jump': Flags.string({
      summary: 'Jump host, [user@]host[:port]; repeat for a chain. Replaces ProxyJump.',
      multiple: true,
    }),
    'ssh-key': Flags.string({
      summary: 'Private key file; repeat for several. Replaces IdentityFile.',
      multiple: true,
    }),
    'ssh-port': Flags.integer({
      summary: 'Port, when HOST names none. Beats Port in the ssh config.',
      min: 1,
      max: 65535,
    }),
  };

  async run(): Promise<HostResolution> {
    const { flags } = this;
    const resolution = resolveHost({
      host: this.args.host,
      sshConfigFile: flags['ssh-config'],
      jumps: flags['ssh-jump'],
      keyFiles: flags['ssh-key'],
      port: flags['ssh-port'],
    });
    if (!this.jsonEnabled()) for (const line of renderHostResolve(resolution, this.style)) this.log(line);
    return resolution;
  }
}
