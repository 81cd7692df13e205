import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { outputFlags } from '../cli/output-flag.js';
import { hostConnectOptionsFromFlags, sshFlags } from '../cli/ssh-flags.js';
import { parseNodeLabels, resolveJoinSettings } from '../cluster/config.js';
import { joinPhases, runJoin, type JoinResult } from '../cluster/join.js';
import { prepareNode } from '../cluster/prepare.js';
import { requestedServiceManager } from '../hosts/service-manager.js';
import { ValidationError } from '../errors.js';
import { parseBootstrapToken } from '../trust/bootstrap-token.js';
import { parseCaPins } from '../trust/ca-pin.js';
import { describePhases } from '../workflow/phase.js';
import { controlPlaneJoinFlags, controlPlaneJoinOptions } from './init/phase/control-plane-flags.js';
import { listFlag, nodeFlags, readConfigFile } from './init/phase/node-flags.js';

export default class Join extends BaseCommand<typeof Join> {
  /** Set by the generated `join phase <name>` subcommands. */
  static onlyPhase: string | undefined;
  static override summary = "Join this host (or --host) to a cluster with kubeadm's token and CA pin trust model.";
  static override description = `Phases (skip with --skip-phases, run one with "edgeadm join phase <name>"):\n\n${describePhases(joinPhases())}\n\nDiscovery runs on this machine before anything reaches the host: a wrong token, a wrong pin or an unreachable control plane installs nothing.`;
  static override examples = [
    '<%= config.bin %> join 10.0.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:<hash> --install-pkg-path ./pkg.tar.gz',
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
    token: Flags.string({ summary: 'The bootstrap token, <id>.<secret>.' }),
    'discovery-token-ca-cert-hash': Flags.string({
      summary: 'Pin of the cluster CA, sha256:<hex> (repeatable).',
      multiple: true,
    }),
    'discovery-token-unsafe-skip-ca-verification': Flags.boolean({
      summary: 'Trust the CA in cluster-info without a pin.',
    }),
    'discovery-timeout': Flags.string({ summary: 'How long discovery keeps trying (Go duration). Default 5m0s.' }),
    ...controlPlaneJoinFlags,
  };

  async run(): Promise<JoinResult> {
    const { flags } = this;
    const settings = resolveJoinSettings({
      ...readConfigFile(flags.config),
      flags: {
        endpoint: this.args.endpoint,
        token: flags.token,
        caCertHashes: flags['discovery-token-ca-cert-hash'],
        unsafeSkipCaVerification: flags['discovery-token-unsafe-skip-ca-verification'] ? true : undefined,
        discoveryTimeout: flags['discovery-timeout'],
        installPackage: flags['install-pkg-path'],
        nodeName: flags['node-name'],
        nodeLabels: parseNodeLabels(flags['node-labels']),
        enableEdge: flags['enable-edge'] ? true : undefined,
      },
    });
    if (!settings.endpoint || !settings.token) {
      const missing = [
        ...(settings.endpoint ? [] : ['the API server endpoint (host:port)']),
        ...(settings.token ? [] : ['--token']),
      ];
      throw new ValidationError(`join needs ${missing.join(' and ')}`, {
        code: 'E_FLAG_MISSING',
        hints: ['"edgeadm token create --print-join-command" on the control plane prints a whole join command.'],
      });
    }
    // Malformed trust input fails here, before any host is reached, whatever else is wrong later.
    parseBootstrapToken(settings.token);
    parseCaPins(settings.caCertHashes);
    if (settings.caCertHashes.length === 0 && !settings.unsafeSkipCaVerification) {
      throw new ValidationError(
        'join needs --discovery-token-ca-cert-hash (or --discovery-token-unsafe-skip-ca-verification)',
        {
          code: 'E_FLAG_MISSING',
          hints: ['edgeadm init printed the hash; "edgeadm certs ca-hash" prints it on the control plane.'],
        },
      );
    }
    this.redactor.addSecret(settings.token);
    if (flags['certificate-key']) this.redactor.addSecret(flags['certificate-key']);
    const prepared = await prepareNode({
      connect: hostConnectOptionsFromFlags(flags, { env: process.env, redactor: this.redactor, logger: this.logger }),
      isDryRun: flags['dry-run'],
      distribution: flags.distribution ?? 'k3s',
      installPackage: settings.installPackage,
      requestedServiceManager: requestedServiceManager(process.env),
      logger: this.logger,
    });
    const only = (this.constructor as typeof Join).onlyPhase;
    try {
      return await runJoin({
        ...prepared,
        isDryRun: flags['dry-run'],
        ignorePreflightErrors: listFlag(flags['ignore-preflight-errors']) ?? [],
        endpoint: settings.endpoint,
        token: settings.token,
        caCertHashes: settings.caCertHashes,
        isUnsafeSkipCaVerification: settings.unsafeSkipCaVerification,
        discoveryTimeout: settings.discoveryTimeout,
        nodeLabels: settings.nodeLabels,
        enableEdge: settings.enableEdge,
        ...controlPlaneJoinOptions(flags),
        ...(settings.nodeName ? { nodeName: settings.nodeName } : {}),
        ...(flags['skip-phases'] ? { skipPhases: listFlag(flags['skip-phases']) ?? [] } : {}),
        ...(only ? { only } : {}),
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
  }
}
