import { resolve } from 'node:path';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { discover, parseDiscoveryRequest, parseDiscoveryTimeout } from '../../../trust/discovery.js';
import { assertSecretFileWritable, writeSecretFileAtomic } from '../../../trust/secret-file.js';
import { DEFAULT_DISCOVERY_TIMEOUT, requiredTokenDiscoveryFlags } from '../../../cli/flags/discovery-flags.js';

/**
 * What `join phase discovery --json` prints. `kubeconfig` (which holds the
 * token) is there only without --output; with it, `output` names the file.
 */
export interface JoinDiscoveryResult {
  endpoint: string;
  server: string;
  caPins: string[];
  matchedPin?: string;
  isCaVerified: boolean;
  output?: string;
  kubeconfig?: string;
}

export default class JoinPhaseDiscovery extends BaseCommand<typeof JoinPhaseDiscovery> {
  static override summary = "Run join's discovery phase alone: verify the API server with a token and CA pin.";
  static override description =
    'Fetches kube-public/cluster-info from the API server, checks its JWS signature with the bootstrap token, checks ' +
    'the CA against --discovery-token-ca-cert-hash, fetches it again over TLS verified with that CA, and writes the ' +
    "kubelet's TLS-bootstrap kubeconfig to --output (mode 0600, atomically) or stdout. It exits 0 only when " +
    'discovery is verified; on any failure it writes nothing. With --json it prints the server and CA pins, and ' +
    'the kubeconfig itself only when there is no --output.';
  static override examples = [
    '<%= config.bin %> join phase discovery 10.0.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:<hash> --output /etc/kubernetes/bootstrap-kubelet.conf',
    '<%= config.bin %> join phase discovery 10.0.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-unsafe-skip-ca-verification',
  ];
  static override args = {
    endpoint: Args.string({ required: true, description: 'The API server, host:port.' }),
  };
  static override flags = {
    ...requiredTokenDiscoveryFlags,
    output: Flags.string({
      char: 'o',
      summary: 'Write the bootstrap kubeconfig here instead of stdout.',
      helpValue: 'FILE',
    }),
  };

  async run(): Promise<JoinDiscoveryResult> {
    const { flags } = this;
    const request = parseDiscoveryRequest({
      endpoint: this.args.endpoint,
      token: flags.token,
      caCertHashes: flags['discovery-token-ca-cert-hash'] ?? [],
      isUnsafeSkipCaVerification: flags['discovery-token-unsafe-skip-ca-verification'],
      timeoutMs: parseDiscoveryTimeout(flags['discovery-timeout'] ?? DEFAULT_DISCOVERY_TIMEOUT),
    });
    const output = flags.output === undefined ? undefined : resolve(flags.output);
    if (output !== undefined) assertSecretFileWritable(output);
    const result = await discover(request, { logger: this.logger });
    const summary = `${result.server}, CA ${result.isCaVerified ? `verified by pin ${result.matchedPin}` : 'NOT verified'}`;
    if (output === undefined) {
      this.logToStderr(`[discovery] verified ${summary}`);
      this.log(result.bootstrapKubeconfig.trimEnd());
    } else {
      writeSecretFileAtomic(output, result.bootstrapKubeconfig);
      this.log(`[discovery] verified ${summary}; wrote the bootstrap kubeconfig to ${output}`);
    }
    return {
      endpoint: result.endpoint,
      server: result.server,
      caPins: result.caPins,
      ...(result.matchedPin === undefined ? {} : { matchedPin: result.matchedPin }),
      isCaVerified: result.isCaVerified,
      ...(output === undefined ? { kubeconfig: result.bootstrapKubeconfig } : { output }),
    };
  }
}
