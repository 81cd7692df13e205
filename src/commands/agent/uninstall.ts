import { resolve } from 'node:path';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { hostConnectOptionsFromFlags, sshFlags } from '../../cli/flags/ssh-flags.js';
import { connectHost } from '../../hosts/connect.js';
import { DEFAULT_AGENT_DATA_DIR } from '../register-cloud.js';
import { uninstallAgent, type AgentUninstallResult } from '../../registration/agent-uninstall.js';

export default class AgentUninstall extends BaseCommand<typeof AgentUninstall> {
  static override summary = 'Remove the tunnel agent register-cloud installed on this host or --host.';
  static override description =
    'Stops and disables edgeadm-tunnel-agent.service and removes its unit, its data directory (certificate, key, kubeconfig) and its system user. The edgeadm binary stays. The cluster stays registered on the hub: revoke it there with "edgeadm hub clusters delete NAME".';
  static override examples = [
    '<%= config.bin %> agent uninstall --host root@10.0.42.10',
    '<%= config.bin %> agent uninstall --data-dir /var/lib/edgeadm/agent --json',
  ];
  static override flags = {
    ...sshFlags,
    'data-dir': Flags.string({
      summary: "The agent's data directory, as given to register-cloud.",
      default: DEFAULT_AGENT_DATA_DIR,
    }),
  };

  async run(): Promise<AgentUninstallResult> {
    const host = await connectHost(
      hostConnectOptionsFromFlags(this.flags, { env: process.env, redactor: this.redactor, logger: this.logger }),
    );
    let result: AgentUninstallResult;
    try {
      result = await uninstallAgent({
        host,
        dataDir: resolve(this.flags['data-dir']),
        env: process.env,
        logger: this.logger,
      });
    } finally {
      await host.close();
    }
    this.log(
      result.removed.length === 0 ? `no tunnel agent on ${result.host}` : `removed ${result.removed.join(', ')}`,
    );
    if (result.cluster !== undefined) {
      this.log(
        `cluster ${result.cluster} is still registered on the hub: edgeadm hub clusters delete ${result.cluster}`,
      );
    }
    return result;
  }
}
