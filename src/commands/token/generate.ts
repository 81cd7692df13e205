import { BaseCommand } from '../../cli/base-command.js';
import { formatBootstrapToken, generateBootstrapToken } from '../../trust/bootstrap-token.js';

/** What `token generate --json` prints. The token is a credential. */
export interface TokenGenerateResult {
  token: string;
}

export default class TokenGenerate extends BaseCommand<typeof TokenGenerate> {
  static override summary = 'Generate a new bootstrap token and print it (it is not stored anywhere).';
  static override description =
    'Prints one new token of the form [a-z0-9]{6}.[a-z0-9]{16}, drawn from the system random source. ' +
    'It is not stored anywhere and is valid on no cluster until a bootstrap token Secret is created for it there.';
  static override examples = ['<%= config.bin %> token generate', '<%= config.bin %> token generate --json'];

  async run(): Promise<TokenGenerateResult> {
    const token = formatBootstrapToken(generateBootstrapToken());
    this.log(token);
    return { token };
  }
}
