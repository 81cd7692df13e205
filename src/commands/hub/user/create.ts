import { resolve } from 'node:path';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { loadHubConfig, renderHubConfig, writeHubConfig } from '../../../hub/contract/hub-config.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { parseGoDuration } from '../../../trust/duration.js';

/** What `hub user create --json` prints (no token when written to --output). */
export interface HubUserCreateResult {
  name: string;
  clustersSelector: string;
  groups: string[];
  expiresAt?: string;
  output?: string;
  /** The user's hub config (holds the token), only with --json and no --output. */
  hubConfig?: string;
}

export default class HubUserCreate extends BaseCommand<typeof HubUserCreate> {
  static override summary = 'Create a hub user limited to the clusters a selector matches, and write its hub config.';
  static override description =
    'The user reaches only clusters whose labels match --clusters-selector, and is impersonated on them as NAME ' +
    "with --groups, so each cluster's own RBAC decides what the user may do there. Running it again for the same " +
    'name replaces the user and its token.';
  static override examples = [
    '<%= config.bin %> hub user create alice --clusters-selector env=dev --groups dev-team --output alice.yaml',
  ];
  static override args = { name: Args.string({ required: true, description: 'User name (impersonated downstream).' }) };
  static override flags = {
    ...hubConfigFlags,
    'clusters-selector': Flags.string({
      required: true,
      summary: 'Label selector of the clusters the user may reach.',
    }),
    groups: Flags.string({ summary: 'Comma-separated groups impersonated downstream.', default: '' }),
    ttl: Flags.string({ summary: 'How long the user token lives (Go duration; 0 = never expires).', default: '0' }),
    output: Flags.string({
      char: 'o',
      summary: "Write the user's hub config here (mode 0600) instead of stdout.",
      helpValue: 'FILE',
    }),
  };

  async run(): Promise<HubUserCreateResult> {
    const { flags } = this;
    const created = await new HubClient(loadHubConfig(flags['hub-config'])).createUser({
      name: this.args.name,
      clustersSelector: flags['clusters-selector'],
      groups: flags.groups
        .split(',')
        .map((g) => g.trim())
        .filter((g) => g !== ''),
      ttlMs: parseGoDuration(flags.ttl),
    });
    this.redactor.addSecret(created.token);
    if (!this.jsonEnabled()) {
      this.logToStderr(
        `user ${created.name}: its hub config holds a new token; a user of this name made before is replaced, and its old token no longer works`,
      );
    }
    const config = { server: created.server, caPem: created.caPem, user: created.name, token: created.token };
    const result: HubUserCreateResult = {
      name: created.name,
      clustersSelector: created.clustersSelector,
      groups: created.groups,
    };
    if (created.expiresAt !== undefined) result.expiresAt = created.expiresAt;
    if (flags.output === undefined) {
      // With --json the config (a credential) is in the one JSON document instead.
      if (this.jsonEnabled()) return { ...result, hubConfig: renderHubConfig(config) };
      process.stdout.write(renderHubConfig(config));
      return result;
    }
    const output = resolve(flags.output);
    writeHubConfig(output, config);
    this.log(`wrote the hub config of user ${created.name} to ${output}`);
    return { ...result, output };
  }
}
