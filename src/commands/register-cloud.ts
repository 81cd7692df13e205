import { resolve } from 'node:path';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { hostConnectOptionsFromFlags, sshFlags } from '../cli/flags/ssh-flags.js';
import { connectHost } from '../hosts/connect.js';
import type { Logger } from '../log/run-log.js';
import { serviceLogger, stopSignal } from '../log/service-logger.js';
import { runAgentService } from '../registration/agent-service.js';
import { agentBinary, registerAsService } from '../registration/register-service.js';
import { parseRegisterRequest, type RegisterRequest } from '../registration/register-request.js';
import { register } from '../registration/registration.js';

/** Where the agent keeps its state unless told otherwise. */
export const DEFAULT_AGENT_DATA_DIR = '/var/lib/edgeadm/agent';

/** What `register-cloud --json` prints. */
export interface RegisterCloudResult {
  cluster: string;
  hub: string;
  dataDir: string;
  /** The data directory already held this registration; the hub was not asked again. */
  wasRegistered: boolean;
  /** Where the agent service was installed (without --foreground). */
  host?: string;
  /** Paths the install wrote or replaced on the host (empty on a re-run that changed nothing). */
  changed?: string[];
  service?: string;
}

export default class RegisterCloud extends BaseCommand<typeof RegisterCloud> {
  static override summary = 'Register this edge cluster with a cloud hub, reached outbound only.';
  static override description =
    'Discovers the hub with the token and CA pin (the same checks and messages as join), makes a key and a CSR ' +
    'here, gets a client certificate the hub signs for the cluster, and stores it under --data-dir (mode 0600). ' +
    'With --foreground it then runs the tunnel agent until SIGINT/SIGTERM. Otherwise it installs the agent as a ' +
    'service on this machine or on --host (over SSH): /usr/local/bin/edgeadm (this single binary, or ' +
    '--edgeadm-binary), --data-dir (0700, credentials 0600) and edgeadm-tunnel-agent.service, started by systemd ' +
    '(EDGEADM_SERVICE_MANAGER=direct on hosts without it). A re-run changes nothing; a failed install undoes its ' +
    'changes on the host. --register-only only writes --data-dir here.\n\n' +
    'The agent acts for hub users by impersonation, so its identity on this cluster needs exactly one right: ' +
    'a ClusterRole with rules [{apiGroups: [""], resources: [users, groups], verbs: [impersonate]}], bound to it. ' +
    'register-cloud checks that right (SelfSubjectAccessReview) before it uses the token.\n\n' +
    'With --create-service-account, --kubeconfig must be a cluster admin: register-cloud then creates (or finds) ' +
    'ServiceAccount kube-system/edgeadm-tunnel-agent, ClusterRole and ClusterRoleBinding edgeadm-tunnel-agent with ' +
    'that rule and list on nodes (the hub then shows the node count), and Secret kube-system/edgeadm-tunnel-agent-token (type kubernetes.io/service-account-token), ' +
    'and the agent uses that token (DATA_DIR/upstream.kubeconfig, mode 0600). The admin credentials are not stored. ' +
    'Without it, the agent uses the --kubeconfig identity as it is.';
  static override examples = [
    '<%= config.bin %> register-cloud hub.example.com:9443 --token abcdef.0123456789abcdef --hub-ca-cert-hash sha256:<hash> --name store-042 --kubeconfig ./store-042-admin.yaml --create-service-account --host root@10.0.42.10',
    '<%= config.bin %> register-cloud hub.example.com:9443 --token abcdef.0123456789abcdef --hub-ca-cert-hash sha256:<hash> --name store-042 --labels env=prod,region=eu --foreground',
    '<%= config.bin %> register-cloud hub.example.com:9443 --token abcdef.0123456789abcdef --hub-ca-cert-hash sha256:<hash> --name store-042 --kubeconfig /etc/rancher/k3s/k3s.yaml --create-service-account --foreground',
    '<%= config.bin %> register-cloud hub.example.com:9443 --token abcdef.0123456789abcdef --hub-ca-cert-hash sha256:<hash> --name store-042 --proxy http://proxy.site.local:3128 --foreground',
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
    proxy: Flags.string({
      summary: 'HTTP proxy to reach the hub through (CONNECT): http://[user:pass@]host:port. Stored for the agent.',
      description:
        'Without it, HTTPS_PROXY (or https_proxy) is used unless NO_PROXY covers the hub. TLS to the hub runs inside ' +
        'the CONNECT tunnel, so the hub CA pin and the client certificate apply end to end. The credentials are kept in ' +
        'DATA_DIR/agent.yaml (mode 0600) and never logged.',
    }),
    'create-service-account': Flags.boolean({
      summary:
        'With an admin --kubeconfig: create a ServiceAccount that may only impersonate, and run the agent as it.',
    }),
    'edgeadm-binary': Flags.string({
      summary: 'The edgeadm single binary to install on the host. Default: this one, when run as the single binary.',
    }),
    'register-only': Flags.boolean({
      exclusive: ['host', 'foreground'],
      summary: 'Only register and write --data-dir here; run the agent later with "edgeadm agent tunnel".',
    }),
    foreground: Flags.boolean({
      exclusive: ['host'],
      summary: 'Run the tunnel agent here in the foreground, instead of installing it as a service.',
    }),
    ...sshFlags,
  };

  async run(): Promise<RegisterCloudResult> {
    const { flags } = this;
    // Everything is parsed and checked here, before any connection: a malformed --token is refused now.
    const request = parseRegisterRequest({
      hub: this.args.hub,
      token: flags.token,
      caCertHashes: flags['hub-ca-cert-hash'],
      cluster: flags.name,
      labels: flags.labels,
      kubeconfig: flags.kubeconfig,
      createServiceAccount: flags['create-service-account'],
      discoveryTimeout: flags['discovery-timeout'],
      proxy: flags.proxy,
    });
    const dataDir = resolve(flags['data-dir']);
    const logger = serviceLogger({ logger: this.logger, redactor: this.redactor, isVerbose: flags.verbose });
    if (!flags.foreground && !flags['register-only']) return this.#asService(request, dataDir, logger);
    const { state, wasRegistered } = await register(request, { dataDir, logger });
    this.log(
      `cluster ${request.cluster} ${wasRegistered ? 'was already' : 'is'} registered with the hub at ${state.hubServer}; credentials in ${dataDir}`,
    );
    if (flags.foreground) await runAgentService({ dataDir, logger, signal: stopSignal(), state });
    else this.log(`run the agent with: edgeadm agent tunnel --data-dir ${dataDir}`);
    return { cluster: request.cluster, hub: state.hubServer, dataDir, wasRegistered };
  }

  /** Registers and installs the agent as a service on this machine or --host. */
  async #asService(request: RegisterRequest, dataDir: string, logger: Logger): Promise<RegisterCloudResult> {
    const { flags } = this;
    const binary = await agentBinary(flags['edgeadm-binary']);
    const host = await connectHost(
      hostConnectOptionsFromFlags(flags, { env: process.env, redactor: this.redactor, logger: this.logger }),
    );
    try {
      const done = await registerAsService(request, { host, dataDir, binary, env: process.env, logger });
      this.log(
        `cluster ${request.cluster} is registered with the hub at ${done.hubServer}; agent service on ${done.host}: ` +
          (done.changed.length === 0 ? 'already installed, nothing changed' : `${done.service} (${dataDir})`),
      );
      return { cluster: request.cluster, hub: done.hubServer, dataDir, ...done };
    } finally {
      await host.close();
    }
  }
}
