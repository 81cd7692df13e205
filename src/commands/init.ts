import { homedir } from 'node:os';
import { join } from 'node:path';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { outputFlags } from '../cli/flags/output-flag.js';
import { hostConnectOptionsFromFlags, sshFlags } from '../cli/flags/ssh-flags.js';
import { initHost, initPhases, type InitResult } from '../cluster/init.js';
import { parseInitRequest } from '../cluster/init-request.js';
import { requestedServiceManager } from '../hosts/service-manager.js';
import { formatBootstrapToken } from '../trust/bootstrap-token.js';
import { describePhases } from '../workflow/phase.js';
import { controlPlaneInitFlags } from '../cli/flags/control-plane-flags.js';
import { nodeFlags, readConfigFile } from '../cli/flags/node-flags.js';

export default class Init extends BaseCommand<typeof Init> {
  /** Set by the generated `init phase <name>` subcommands. */
  static onlyPhase: string | undefined;
  static override summary =
    'Bootstrap a lightweight control plane (k3s or kubeadm) on this host or --host, from an offline install package.';
  static override description = `Phases (skip with --skip-phases, run one with "edgeadm init phase <name>"):\n\n${describePhases(initPhases())}\n\nA re-run after success changes nothing and says "already done" per phase (the check phases, preflight and wait-ready, say "checked"). On hosts without systemd set EDGEADM_SERVICE_MANAGER=direct.`;
  static override examples = [
    '<%= config.bin %> init --install-pkg-path ./edge-k3s-v1.30.4-amd64.tar.gz',
    '<%= config.bin %> init --host root@10.0.0.10 --install-pkg-path ./pkg.tar.gz --kubeconfig-out ./admin.yaml',
    '<%= config.bin %> init --host root@10.0.0.10 --install-pkg-path ./pkg.tar.gz --dry-run',
    '<%= config.bin %> init --host root@10.0.0.10 --install-pkg-path ./pkg.tar.gz --control-plane-endpoint 10.0.0.10 --upload-certs',
  ];
  static override flags = {
    ...sshFlags,
    ...outputFlags,
    ...nodeFlags,
    'apiserver-advertise-address': Flags.string({
      summary: "The address the API server advertises; default: the host's first global IPv4 address.",
    }),
    'apiserver-cert-extra-sans': Flags.string({
      summary: 'Extra names and addresses for the API server certificate (comma-separated).',
      multiple: true,
    }),
    'pod-network-cidr': Flags.string({ summary: 'The pod network (default 10.42.0.0/16).' }),
    'service-cidr': Flags.string({ summary: 'The Service network (default 10.43.0.0/16).' }),
    token: Flags.string({ summary: 'The bootstrap token to create, <id>.<secret>; default: a new one.' }),
    'token-ttl': Flags.string({
      summary: 'How long the bootstrap token lives (Go duration; 0 = forever). Default 24h0m0s.',
    }),
    'kubeconfig-out': Flags.string({
      summary: 'Write the admin kubeconfig to this file (mode 0600) instead of merging it into ~/.kube/config.',
    }),
    'skip-kubeconfig': Flags.boolean({ summary: 'Do not write the admin kubeconfig on this machine.' }),
    ...controlPlaneInitFlags,
  };

  async run(): Promise<InitResult> {
    const { flags } = this;
    const request = parseInitRequest({
      flags,
      config: readConfigFile(flags.config),
      userKubeconfigPath: join(homedir(), '.kube', 'config'),
      only: (this.constructor as typeof Init).onlyPhase,
    });
    if (request.requestedToken) this.redactor.addSecret(formatBootstrapToken(request.requestedToken));
    this.redactor.addSecret(request.certificateKey);
    const result = await initHost(request, {
      connect: hostConnectOptionsFromFlags(flags, { env: process.env, redactor: this.redactor, logger: this.logger }),
      requestedServiceManager: requestedServiceManager(process.env),
      ...this.workflowOutput,
    });
    if (result.joinCommand && !this.jsonEnabled()) {
      this.log(
        result.isDryRun
          ? 'Dry run: nothing was changed. The join command would be:'
          : 'Your control plane is ready. Join edge nodes with:',
      );
      this.log(`  ${result.joinCommand}`);
      if (result.controlPlaneJoinCommand) {
        this.log('Join more control planes (the certificate key expires in 2 hours) with:');
        this.log(`  ${result.controlPlaneJoinCommand}`);
      }
    } else if (result.certificateKey && !this.jsonEnabled()) {
      // `init phase upload-certs` alone: the new key is the one thing the operator needs.
      this.log('Join more control planes with --control-plane --certificate-key (it expires in 2 hours):');
      this.log(`  ${result.certificateKey}`);
    }
    return result;
  }
}
