import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { runEdgeProxyAgent, type EdgeProxyRunResult } from '../../edge/agent.js';
import {
  DEFAULT_CACHE_DIR,
  DEFAULT_CACHE_MAX_ENTRIES,
  DEFAULT_HEALTH_INTERVAL,
  DEFAULT_LISTEN,
  DEFAULT_METRICS_LISTEN,
} from '../../edge/limits.js';

export type { EdgeProxyRunResult } from '../../edge/agent.js';

export default class AgentEdgeProxy extends BaseCommand<typeof AgentEdgeProxy> {
  static override summary = 'Run the edge-proxy: a caching API proxy that keeps an edge node working offline.';
  static override description = `The node's kubelet and agents talk to the API server through it. GET and LIST answers are cached on local disk per identity (kept current from WATCH events); when the API server is unreachable they are served from there, watches are held open and resync when it returns, and writes get 503 — except a node registration for a node already known, which gets the 409 AlreadyExists the API server would give, so the kubelet comes back after an offline reboot. Bearer tokens pass through; client certificates are mapped with --client-cert-map. Runs until SIGTERM or SIGINT.`;
  static override examples = [
    '<%= config.bin %> agent edge-proxy --kubeconfig /etc/edgeadm/upstream.yaml --listen 127.0.0.1:10261 --cache-dir /var/lib/edgeadm/edge-proxy',
    '<%= config.bin %> agent edge-proxy --kubeconfig /etc/kubernetes/kubelet.conf --client-cert-map system:node:edge-1=/var/lib/kubelet/pki/kubelet-client-current.pem,/var/lib/kubelet/pki/kubelet-client-current.pem',
    '<%= config.bin %> agent edge-proxy --kubeconfig up.yaml --tls-cert /etc/edgeadm/proxy.crt --tls-key /etc/edgeadm/proxy.key --cache-max-bytes 512Mi --cache-max-entries 20000 --health-interval 10s',
  ];

  static override flags = {
    kubeconfig: Flags.string({
      summary: 'Kubeconfig of the upstream API server: its URL, CA, and the credentials of the /readyz probe.',
      required: true,
    }),
    listen: Flags.string({ summary: 'ADDRESS:PORT to serve HTTPS on (loopback by default).', default: DEFAULT_LISTEN }),
    'metrics-listen': Flags.string({
      summary: 'ADDRESS:PORT of the plain-HTTP /healthz and /metrics endpoint; "none" turns it off.',
      default: DEFAULT_METRICS_LISTEN,
    }),
    'cache-dir': Flags.string({
      summary: 'Directory of the on-disk cache (made 0700), and of the generated serving CA in pki/.',
      default: DEFAULT_CACHE_DIR,
    }),
    'cache-max-bytes': Flags.string({
      summary: 'Bound on the bytes the cache keeps (256Mi, 1Gi, or bytes); least recently used entries go first.',
      default: '256Mi',
    }),
    'cache-max-entries': Flags.integer({
      summary: 'Bound on the number of cached answers.',
      default: DEFAULT_CACHE_MAX_ENTRIES,
      min: 1,
    }),
    'tls-cert': Flags.string({
      summary:
        'Serving certificate (PEM). Without it one is made for --listen, signed by a CA kept in <cache-dir>/pki.',
      dependsOn: ['tls-key'],
    }),
    'tls-key': Flags.string({ summary: 'Private key of --tls-cert (PEM).', dependsOn: ['tls-cert'] }),
    'client-ca-file': Flags.string({
      summary: 'CA that client certificates must chain to. Defaults to the upstream CA from --kubeconfig.',
    }),
    'client-cert-map': Flags.string({
      summary: 'CN=certfile,keyfile: a client certificate with this CN is proxied with this certificate. Repeatable.',
      description:
        'Client certificates with a CN not listed here are refused (401), never proxied with another identity.',
      multiple: true,
      default: [],
    }),
    'health-interval': Flags.string({
      summary: 'Interval of the /readyz probe while online (offline it probes every second).',
      default: DEFAULT_HEALTH_INTERVAL,
    }),
    'k3s-supervisor': Flags.boolean({
      summary: "Stand in for the k3s supervisor of this node's k3s agent while the server is unreachable.",
      description:
        "For a k3s agent whose server is this proxy (join --enable-edge on k3s): /cacerts and the agent's start-up answers are kept and given back offline only to the same credentials, node name and password; /v1-k3s/apiservers names this proxy; offline, the node's own kubelet certificate may hold its /v1-k3s/connect tunnel and gets /readyz from the proxy. See src/edge/README.md.",
    }),
    site: Flags.string({
      summary:
        "This node's site (join --site): the grid Services' EndpointSlices it relays hold only this site's endpoints.",
      description:
        "Every EndpointSlice of a SiteGrid's Service (label edgeadm.io/site-grid, no edgeadm.io/site) that the proxy answers, relays in a watch or serves from its cache keeps only the endpoints whose zone is this site, so the node's kube-proxy sends the grid's traffic to its own site. See docs/guides/site-grids.md.",
    }),
  };

  async run(): Promise<EdgeProxyRunResult> {
    return runEdgeProxyAgent(this.flags, { logger: this.logger, announce: (line) => this.logToStderr(line) });
  }
}
