import { readFileSync } from 'node:fs';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { KubeClient } from '../../kube/client.js';
import { readKubeconfigFile } from '../../kube/kubeconfig.js';
import { serviceLogger, stopSignal } from '../../log/service-logger.js';
import { EGRESS_SOCKET_PATH, NODE_TUNNEL_METRICS_LISTEN, NODE_TUNNEL_PORT } from '../../node-tunnel/limits.js';
import { parseNodeTunnelServerRequest, type NodeTunnelServerRequest } from '../../node-tunnel/request.js';
import { runNodeTunnelServer } from '../../node-tunnel/server.js';
import type { TunnelListenerTls } from '../../node-tunnel/tunnel-listener.js';

export default class AgentNodeTunnelServer extends BaseCommand<typeof AgentNodeTunnelServer> {
  static override summary =
    "Run the node tunnel's control-plane side: the API server reaches edge nodes' kubelets through the tunnels the nodes open.";
  static override description = `Installed on a kubeadm control plane by "edgeadm init --enable-edge". Serves HTTP CONNECT on --socket for the API server's egress selector (cluster egress), and a TLS port where each edge node's "edgeadm agent node-tunnel" connects with its kubelet client certificate. A CONNECT to an edge node's kubelet goes through that node's own tunnel (503 at once while it has none); an edge node is reached at its kubelet port only; other addresses are dialled directly. Runs until SIGTERM or SIGINT.`;
  static override examples = [
    '<%= config.bin %> agent node-tunnel-server --kubeconfig /etc/kubernetes/admin.conf --tls-cert /etc/kubernetes/pki/apiserver.crt --tls-key /etc/kubernetes/pki/apiserver.key',
  ];
  static override flags = {
    kubeconfig: Flags.string({ summary: 'Kubeconfig with the right to list Nodes.', required: true }),
    socket: Flags.string({ summary: "The API server's egress Unix socket.", default: EGRESS_SOCKET_PATH }),
    listen: Flags.string({
      summary: 'ADDRESS:PORT where node agents connect.',
      default: `0.0.0.0:${NODE_TUNNEL_PORT}`,
    }),
    'metrics-listen': Flags.string({
      summary: 'ADDRESS:PORT of the plain-HTTP /metrics and /healthz; "none" turns it off.',
      default: NODE_TUNNEL_METRICS_LISTEN,
    }),
    'ca-file': Flags.string({
      summary: "The cluster CA: nodes' kubelet client certificates must chain to it.",
      default: '/etc/kubernetes/pki/ca.crt',
    }),
    'tls-cert': Flags.string({
      summary: 'Serving certificate of the node port (PEM), from the cluster CA.',
      required: true,
    }),
    'tls-key': Flags.string({ summary: 'Private key of --tls-cert (PEM).', required: true }),
  };

  async run(): Promise<NodeTunnelServerRequest> {
    const request = parseNodeTunnelServerRequest(this.flags);
    const logger = serviceLogger({ logger: this.logger, redactor: this.redactor, isVerbose: this.flags.verbose });
    const client = new KubeClient(await readKubeconfigFile(request.kubeconfigPath));
    const readTls = (): TunnelListenerTls => ({
      caPem: readFileSync(request.caFile, 'utf8'),
      certPem: readFileSync(request.tlsCertFile, 'utf8'),
      keyPem: readFileSync(request.tlsKeyFile, 'utf8'),
    });
    await runNodeTunnelServer({
      socketPath: request.socketPath,
      listen: request.listen,
      metricsListen: request.metricsListen,
      tls: readTls(),
      reloadTls: readTls,
      client,
      logger,
      signal: stopSignal(),
    });
    return request;
  }
}
