import { Args } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { outputFlags } from '../cli/flags/output-flag.js';
import { hostConnectOptionsFromFlags, sshFlags } from '../cli/flags/ssh-flags.js';
import { joinHost, joinPhases, type JoinResult } from '../cluster/join.js';
import { parseJoinRequest } from '../cluster/join-request.js';
import { requestedServiceManager } from '../hosts/service-manager.js';
import { formatBootstrapToken } from '../trust/bootstrap-token.js';
import { describePhases } from '../workflow/phase.js';
import { controlPlaneJoinFlags } from '../cli/flags/control-plane-flags.js';
import { nodeFlags, readConfigFile, siteFlags } from '../cli/flags/node-flags.js';
import { discoveryFlags } from '../cli/flags/discovery-flags.js';

export default class Join extends BaseCommand<typeof Join> {
  /** Set by the generated `join phase <name>` subcommands. */
  static onlyPhase: string | undefined;
  static override summary = "Join this host (or --host) to a cluster with kubeadm's token and CA pin trust model.";
  static override description = `Phases (skip with --skip-phases, run one with "edgeadm join phase <name>"):\n\n${describePhases(joinPhases())}\n\nDiscovery runs on this machine before anything reaches the host: a wrong token, a wrong pin or an unreachable control plane installs nothing.`;
  static override examples = [
    '<%= config.bin %> join 10.0.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:<hash> --install-pkg-path ./pkg.tar.gz',
    '<%= config.bin %> join 10.0.0.10:6443 --site shop-lyon-1 --enable-edge --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:<hash> --install-pkg-path ./pkg.tar.gz',
    '<%= config.bin %> join 10.0.0.10:6443 --host root@10.0.0.21 --token … --discovery-token-ca-cert-hash sha256:<hash> --install-pkg-path ./pkg.tar.gz',
    '<%= config.bin %> join 10.0.0.10:6443 --host root@10.0.0.11 --control-plane --certificate-key <key> --token … --discovery-token-ca-cert-hash sha256:<hash> --install-pkg-path ./pkg.tar.gz',
  ];
  static override args = {
    endpoint: Args.string({ description: 'The API server, host:port (or discovery.endpoint in --config).' }),
  };
  static override flags = {
    ...sshFlags,
    ...outputFlags,
    ...nodeFlags,
    ...siteFlags,
    ...discoveryFlags,
    ...controlPlaneJoinFlags,
  };

  async run(): Promise<JoinResult> {
    const { flags } = this;
    const request = parseJoinRequest({
      endpoint: this.args.endpoint,
      flags,
      config: readConfigFile(flags.config),
      only: (this.constructor as typeof Join).onlyPhase,
    });
    this.redactor.addSecret(formatBootstrapToken(request.discovery.token));
    this.redactor.addSecret(request.certificateKey);
    return joinHost(request, {
      connect: hostConnectOptionsFromFlags(flags, { env: process.env, redactor: this.redactor, logger: this.logger }),
      requestedServiceManager: requestedServiceManager(process.env),
      ...this.workflowOutput,
    });
  }
}
