import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { ValidationError } from '../errors.js';
import { parseLabels } from '../hub/label-selector.js';
import { CLUSTER_NAME_PATTERN } from '../hub/operator-api.js';
import { serviceLogger, stopSignal } from '../hub/service-logger.js';
import { runAgentService } from '../tunnel/agent-service.js';
import { registerCluster } from '../tunnel/registration.js';
import { readUpstreamKubeconfig } from '../tunnel/upstream.js';
import { parseGoDuration } from '../trust/duration.js';

/** Where the agent keeps its state unless told otherwise. */
export const DEFAULT_AGENT_DATA_DIR = '/var/lib/edgeadm/agent';

/** What `register-cloud --json` prints. */
export interface RegisterCloudResult {
  cluster: string;
  hub: string;
  dataDir: string;
}

export default class RegisterCloud extends BaseCommand<typeof RegisterCloud> {
  static override summary = 'Register this edge cluster with a cloud hub, reached outbound only.';
  static override description =
    'Discovers the hub with the token and CA pin (the same checks and messages as join), makes a key and a CSR ' +
    'here, gets a client certificate the hub signs for the cluster, and stores it under --data-dir (mode 0600). ' +
    'With --foreground it then runs the tunnel agent until SIGINT/SIGTERM. The --kubeconfig identity must be ' +
    'allowed to impersonate users and groups on this cluster (a ClusterRole with verbs [impersonate] on users and ' +
    'groups, bound to it); cluster-admin is enough.';
  static override examples = [
    '<%= config.bin %> register-cloud hub.example.com:9443 --token abcdef.0123456789abcdef --hub-ca-cert-hash sha256:<hash> --name store-042 --labels env=prod,region=eu --foreground',
  ];
  static override args = { hub: Args.string({ required: true, description: 'The hub, host:port.' }) };
  static override flags = {
    token: Flags.string({
      required: true,
      summary: 'Hub token, <id>.<secret> ("edgeadm hub token create" prints it).',
    }),
    'hub-ca-cert-hash': Flags.string({ required: true, multiple: true, summary: 'Pin of the hub CA, sha256:<hex>.' }),
    name: Flags.string({ required: true, summary: 'The cluster name at the hub (a DNS label).' }),
    labels: Flags.string({ summary: 'Cluster labels, k=v,k2=v2.', default: '' }),
    kubeconfig: Flags.string({
      summary: 'Kubeconfig the agent reaches this cluster with. Default: $KUBECONFIG, then ~/.kube/config.',
    }),
    'data-dir': Flags.string({ summary: 'Where the agent keeps its credentials.', default: DEFAULT_AGENT_DATA_DIR }),
    'discovery-timeout': Flags.string({ summary: 'How long to keep trying discovery (Go duration).', default: '5m0s' }),
    foreground: Flags.boolean({ summary: 'Run the tunnel agent in the foreground after registering.' }),
  };

  async run(): Promise<RegisterCloudResult> {
    const { flags } = this;
    if (!CLUSTER_NAME_PATTERN.test(flags.name)) {
      throw new ValidationError(`invalid --name ${JSON.stringify(flags.name)}: it must be a DNS label (a-z, 0-9, -)`, {
        code: 'E_HUB_CLUSTER_NAME',
      });
    }
    const kubeconfig = resolve(flags.kubeconfig ?? process.env.KUBECONFIG ?? join(homedir(), '.kube', 'config'));
    await readUpstreamKubeconfig(kubeconfig); // fail on a bad kubeconfig before using the token
    const dataDir = resolve(flags['data-dir']);
    const logger = serviceLogger({ logger: this.logger, redactor: this.redactor, isVerbose: flags.verbose });
    const state = await registerCluster({
      hub: this.args.hub,
      token: flags.token,
      caCertHashes: flags['hub-ca-cert-hash'],
      cluster: flags.name,
      labels: parseLabels(flags.labels),
      kubeconfig,
      dataDir,
      discoveryTimeoutMs: parseGoDuration(flags['discovery-timeout']),
      logger,
    });
    this.log(`cluster ${flags.name} is registered with the hub at ${state.hubServer}; credentials in ${dataDir}`);
    if (flags.foreground) {
      await runAgentService({ dataDir, logger, signal: stopSignal(), state });
    } else {
      this.log(`run the agent with: edgeadm agent tunnel --data-dir ${dataDir}`);
    }
    return { cluster: flags.name, hub: state.hubServer, dataDir };
  }
}
