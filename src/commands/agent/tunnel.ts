import { resolve } from 'node:path';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { serviceLogger, stopSignal } from '../../hub/service-logger.js';
import { runAgentService } from '../../tunnel/agent-service.js';

export default class AgentTunnel extends BaseCommand<typeof AgentTunnel> {
  static override summary = 'Run the hub tunnel agent of a cluster registered with register-cloud.';
  static override examples = ['<%= config.bin %> agent tunnel --data-dir /var/lib/edgeadm/agent'];
  static override flags = {
    'data-dir': Flags.string({ summary: 'The agent state register-cloud wrote.', default: '/var/lib/edgeadm/agent' }),
  };

  async run(): Promise<{ dataDir: string }> {
    const dataDir = resolve(this.flags['data-dir']);
    const logger = serviceLogger({ logger: this.logger, redactor: this.redactor, isVerbose: this.flags.verbose });
    await runAgentService({ dataDir, logger, signal: stopSignal() });
    return { dataDir };
  }
}
