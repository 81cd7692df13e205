import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { clientFromKubeconfig, defaultKubeconfigPath, listTokens, type TokenListEntry } from '../../cluster/tokens.js';

export default class TokenList extends BaseCommand<typeof TokenList> {
  static override summary = 'List the bootstrap tokens of the cluster (ids, never secrets).';
  static override examples = ['<%= config.bin %> token list', '<%= config.bin %> token list --json'];
  static override flags = {
    kubeconfig: Flags.string({ summary: 'Admin kubeconfig. Default: $KUBECONFIG or ~/.kube/config.' }),
    context: Flags.string({ summary: 'Kubeconfig context to use. Default: the current one.' }),
  };

  async run(): Promise<{ tokens: TokenListEntry[] }> {
    const client = await clientFromKubeconfig(this.flags.kubeconfig ?? defaultKubeconfigPath(), this.flags.context);
    const tokens = await listTokens(client);
    if (!this.jsonEnabled()) {
      this.log(['ID', 'EXPIRES', 'USAGES', 'DESCRIPTION'].join('\t'));
      for (const t of tokens) {
        this.log([t.id, t.expires ?? '<forever>', t.usages.join(','), t.description ?? ''].join('\t'));
      }
    }
    return { tokens };
  }
}
