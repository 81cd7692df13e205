import { homedir } from 'node:os';
import { join } from 'node:path';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { outputFlags } from '../cli/output-flag.js';
import { hostConnectOptionsFromFlags, sshFlags } from '../cli/ssh-flags.js';
import { parseNodeLabels, resolveInitSettings } from '../cluster/config.js';
import { initPhases, runInit, type InitResult } from '../cluster/init.js';
import { prepareNode } from '../cluster/prepare.js';
import { requestedServiceManager } from '../hosts/service-manager.js';
import { describePhases } from '../workflow/phase.js';
import { controlPlaneInitFlags, controlPlaneInitOptions } from './init/phase/control-plane-flags.js';
import { listFlag, nodeFlags, readConfigFile } from './init/phase/node-flags.js';

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
    const settings = resolveInitSettings({
      ...readConfigFile(flags.config),
      flags: {
        distribution: flags.distribution,
        installPackage: flags['install-pkg-path'],
        nodeName: flags['node-name'],
        nodeLabels: parseNodeLabels(flags['node-labels']),
        advertiseAddress: flags['apiserver-advertise-address'],
        certSans: listFlag(flags['apiserver-cert-extra-sans']),
        podCidr: flags['pod-network-cidr'],
        serviceCidr: flags['service-cidr'],
        enableEdge: flags['enable-edge'] ? true : undefined,
        token: flags.token,
        tokenTtl: flags['token-ttl'],
      },
    });
    if (settings.token) this.redactor.addSecret(settings.token);
    if (flags['certificate-key']) this.redactor.addSecret(flags['certificate-key']);
    const prepared = await prepareNode({
      connect: hostConnectOptionsFromFlags(flags, { env: process.env, redactor: this.redactor, logger: this.logger }),
      isDryRun: flags['dry-run'],
      distribution: settings.distribution,
      installPackage: settings.installPackage,
      requestedServiceManager: requestedServiceManager(process.env),
      logger: this.logger,
    });
    const { distribution: _name, installPackage, ...rest } = settings;
    let result: InitResult;
    try {
      result = await runInit({
        ...prepared,
        ...rest,
        isDryRun: flags['dry-run'],
        installPackagePath: installPackage!,
        ignorePreflightErrors: listFlag(flags['ignore-preflight-errors']) ?? [],
        ...controlPlaneInitOptions(flags),
        ...(flags['kubeconfig-out'] ? { kubeconfigOut: flags['kubeconfig-out'] } : {}),
        ...(flags['skip-kubeconfig'] ? {} : { userKubeconfigPath: join(homedir(), '.kube', 'config') }),
        ...(flags['skip-phases'] ? { skipPhases: listFlag(flags['skip-phases']) ?? [] } : {}),
        ...((this.constructor as typeof Init).onlyPhase ? { only: (this.constructor as typeof Init).onlyPhase! } : {}),
        logger: this.logger,
        onLine: (line) => {
          this.logger.info(line);
          this.logToStderr(line);
        },
        onEvent: (event) => this.emitEvent({ ...event }),
      });
    } finally {
      await prepared.host.close();
    }
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
