import { readFileSync } from 'node:fs';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { serviceLogger, stopSignal } from '../../log/service-logger.js';
import { runNodeTunnelAgent } from '../../node-tunnel/agent.js';
import { KUBELET_PORT } from '../../node-tunnel/limits.js';
import { parseNodeTunnelAgentRequest, type NodeTunnelAgentRequest } from '../../node-tunnel/request.js';

export default class AgentNodeTunnel extends BaseCommand<typeof AgentNodeTunnel> {
  static override summary =
    "Run an edge node's tunnel agent: the API server reaches this node's kubelet (logs, exec, port-forward) through it.";
  static override description = `Installed on a kubeadm edge node by "edgeadm join --enable-edge". Keeps one TLS connection out to the control plane's node tunnel port, authenticated by the kubelet's own client certificate, and carries the API server's connections to this node's kubelet over it; nothing else. Runs until SIGTERM or SIGINT.`;
  static override examples = ['<%= config.bin %> agent node-tunnel --server https://10.0.0.1:10350 --node-name edge-1'];
  static override flags = {
    server: Flags.string({ summary: "https://HOST:PORT of the control plane's node tunnel port.", required: true }),
    'node-name': Flags.string({ summary: "This node's name (its kubelet certificate's CN names it).", required: true }),
    'ca-file': Flags.string({ summary: 'The cluster CA.', default: '/etc/kubernetes/pki/ca.crt' }),
    credentials: Flags.string({
      summary: "The kubelet's client certificate and key (one PEM file, rotated by the kubelet).",
      default: '/var/lib/kubelet/pki/kubelet-client-current.pem',
    }),
    kubelet: Flags.string({ summary: "HOST:PORT of this node's kubelet.", default: `127.0.0.1:${KUBELET_PORT}` }),
  };

  async run(): Promise<NodeTunnelAgentRequest> {
    const request = parseNodeTunnelAgentRequest(this.flags);
    const logger = serviceLogger({ logger: this.logger, redactor: this.redactor, isVerbose: this.flags.verbose });
    await runNodeTunnelAgent({
      server: request.server,
      caPem: readFileSync(request.caFile, 'utf8'),
      nodeName: request.nodeName,
      credentialsFile: request.credentialsFile,
      kubelet: request.kubelet,
      logger,
      signal: stopSignal(),
    });
    return request;
  }
}
