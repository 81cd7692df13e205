import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { clientFromKubeconfig, createToken, defaultKubeconfigPath, type CreatedToken } from '../../cluster/tokens.js';

export default class TokenCreate extends BaseCommand<typeof TokenCreate> {
  static override summary = 'Create a bootstrap token on the cluster (and sign cluster-info with it).';
  static override examples = [
    '<%= config.bin %> token create --ttl 2h --print-join-command --install-pkg-path ./edge-k3s-v1.30.4-amd64.tar.gz',
    '<%= config.bin %> token create abcdef.0123456789abcdef --description "store 42"',
  ];
  static override args = {
    token: Args.string({ description: 'The token to create, <id>.<secret>; default: a new one.' }),
  };
  static override flags = {
    kubeconfig: Flags.string({ summary: 'Admin kubeconfig. Default: $KUBECONFIG or ~/.kube/config.' }),
    context: Flags.string({ summary: 'Kubeconfig context to use. Default: the current one.' }),
    ttl: Flags.string({ summary: 'How long the token lives (Go duration; 0 = never expires).', default: '24h0m0s' }),
    description: Flags.string({ summary: 'Shown by token list.' }),
    groups: Flags.string({ summary: 'Extra groups (system:bootstrappers:…), repeatable.', multiple: true }),
    'print-join-command': Flags.boolean({ summary: 'Print the whole join command instead of only the token.' }),
    'install-pkg-path': Flags.string({
      summary:
        'With --print-join-command: the install package the nodes join with (default: ./PACKAGE.tar.gz, to replace).',
    }),
  };

  async run(): Promise<CreatedToken> {
    const { flags } = this;
    const client = await clientFromKubeconfig(flags.kubeconfig ?? defaultKubeconfigPath(), flags.context);
    const result = await createToken(client, {
      ...(this.args.token ? { token: this.args.token } : {}),
      ttl: flags.ttl,
      ...(flags.description ? { description: flags.description } : {}),
      ...(flags.groups ? { groups: flags.groups } : {}),
      printJoinCommand: flags['print-join-command'],
      ...(flags['install-pkg-path'] ? { installPackagePath: flags['install-pkg-path'] } : {}),
    });
    this.log(result.joinCommand ?? result.token);
    return result;
  }
}
