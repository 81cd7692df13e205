import { resolve } from 'node:path';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { serviceLogger, stopSignal } from '../../log/service-logger.js';
import { runAgentService } from '../../registration/agent-service.js';

export default class AgentTunnel extends BaseCommand<typeof AgentTunnel> {
  static override summary = 'Run the hub tunnel agent of a cluster registered with register-cloud.';
  static override examples = [
    '<%= config.bin %> agent tunnel --data-dir /var/lib/edgeadm/agent',
    'HTTPS_PROXY=http://proxy.site.local:3128 <%= config.bin %> agent tunnel --data-dir /var/lib/edgeadm/agent',
  ];
  static override flags = {
    'data-dir': Flags.string({ summary: 'The agent state register-cloud wrote.', default: '/var/lib/edgeadm/agent' }),
    proxy: Flags.string({
      summary: 'HTTP proxy to the hub, http://[user:pass@]host:port; overrides the one given to register-cloud.',
      description: 'Without either, HTTPS_PROXY is used unless NO_PROXY covers the hub.',
    }),
  };

  async run(): Promise<{ dataDir: string }> {
    const dataDir = resolve(this.flags['data-dir']);
    const logger = serviceLogger({ logger: this.logger, redactor: this.redactor, isVerbose: this.flags.verbose });
    const proxy = this.flags.proxy;
    await runAgentService({ dataDir, logger, signal: stopSignal(), ...(proxy === undefined ? {} : { proxy }) });
    return { dataDir };
  }
}
