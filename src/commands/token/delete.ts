import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { clientFromKubeconfig, defaultKubeconfigPath, deleteToken } from '../../cluster/tokens.js';

export default class TokenDelete extends BaseCommand<typeof TokenDelete> {
  static override summary = 'Delete a bootstrap token (by id or whole token) and drop its cluster-info signature.';
  static override examples = ['<%= config.bin %> token delete abcdef'];
  static override args = {
    id: Args.string({ required: true, description: 'Token id ([a-z0-9]{6}) or the whole token.' }),
  };
  static override flags = {
    kubeconfig: Flags.string({ summary: 'Admin kubeconfig. Default: $KUBECONFIG or ~/.kube/config.' }),
    context: Flags.string({ summary: 'Kubeconfig context to use. Default: the current one.' }),
  };

  async run(): Promise<{ id: string; isDeleted: true }> {
    const client = await clientFromKubeconfig(this.flags.kubeconfig ?? defaultKubeconfigPath(), this.flags.context);
    const { id } = await deleteToken(client, this.args.id);
    this.log(`bootstrap token "${id}" deleted`);
    return { id, isDeleted: true };
  }
}
