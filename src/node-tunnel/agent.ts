/**
 * The node tunnel's agent (`edgeadm agent node-tunnel`, on each edge node):
 * keeps one TLS connection out to the control plane's tunnel port with the
 * kubelet's own client certificate, and carries the API server's kubelet
 * connections back over it (the hub tunnel's agent loop, src/tunnel/agent.ts:
 * ping, redial with backoff, drain on stop; here its streams go to the
 * kubelet, see kubelet-forwarder.ts).
 */
import { readFileSync } from 'node:fs';
import { EdgeadmError } from '../errors.js';
import type { Logger } from '../log/run-log.js';
import type { AgentIdentity, TunnelFarEnd } from '../tunnel/agent.js';
import { runTunnelAgent } from '../tunnel/agent-loop.js';
import { kubeletForwarder, type KubeletAddress } from './kubelet-forwarder.js';

/** The control plane, as the node's agent names it. */
const NODE_TUNNEL_FAR_END: TunnelFarEnd = {
  name: "the control plane's node tunnel",
  refusalHints: [
    "The agent's --node-name must be the node its kubelet certificate names (CN=system:node:NAME), and the Node must exist.",
  ],
  stopHints: [
    'The node was deleted, or this agent names another node than its kubelet certificate: it cannot connect as it is.',
    'Join the node again with "edgeadm join --enable-edge" (after "edgeadm reset"); it installs the agent as it should be.',
  ],
};

/** Options of {@link runNodeTunnelAgent}. */
export interface NodeTunnelAgentOptions {
  /** `https://host:port` of the control plane's tunnel port. */
  server: string;
  /** The cluster CA (the server's certificate chains to it). */
  caPem: string;
  /** The node's name: what its certificate's CN names. */
  nodeName: string;
  /** The kubelet's client certificate and key, one PEM file (the kubelet rotates it; read at every dial). */
  credentialsFile: string;
  kubelet: KubeletAddress;
  logger: Logger;
  signal: AbortSignal;
}

const PEM_BLOCK = /-----BEGIN ([A-Z ]+)-----[\s\S]+?-----END \1-----\n?/g;

/**
 * The certificate chain and the key of a PEM file that holds both (the
 * kubelet's `kubelet-client-current.pem`). Pure.
 *
 * @throws {EdgeadmError} `E_NODE_TUNNEL_CREDENTIALS` without a certificate or a key.
 */
export function credentialsOfPem(pem: string, what: string): { certPem: string; keyPem: string } {
  const blocks = [...pem.matchAll(PEM_BLOCK)];
  const certPem = blocks
    .filter((block) => block[1] === 'CERTIFICATE')
    .map((block) => block[0])
    .join('');
  const keyPem = blocks.find((block) => /PRIVATE KEY$/.test(block[1] as string))?.[0] ?? '';
  if (certPem === '' || keyPem === '') {
    throw new EdgeadmError(`${what} does not hold a certificate and its private key`, {
      code: 'E_NODE_TUNNEL_CREDENTIALS',
    });
  }
  return { certPem, keyPem };
}

/** Runs the agent until `signal` aborts. */
export async function runNodeTunnelAgent(options: NodeTunnelAgentOptions): Promise<void> {
  const identity = (): AgentIdentity => ({
    cluster: options.nodeName,
    ...credentialsOfPem(readFileSync(options.credentialsFile, 'utf8'), options.credentialsFile),
  });
  await runTunnelAgent({
    hubServer: options.server,
    hubCaPem: options.caPem,
    identity,
    upstream: kubeletForwarder({ kubelet: options.kubelet, logger: options.logger }),
    logger: options.logger,
    signal: options.signal,
    farEnd: NODE_TUNNEL_FAR_END,
  });
}
