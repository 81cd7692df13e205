/**
 * The two commands' typed requests, parsed and checked from their flags
 * before any file is read or socket opened.
 *
 * Pure: no I/O.
 */
import { isAbsolute } from 'node:path/posix';
import { ValidationError } from '../errors.js';
import { parseAuthority } from './routing.js';

/** `edgeadm agent node-tunnel-server`. */
export interface NodeTunnelServerRequest {
  kubeconfigPath: string;
  socketPath: string;
  listen: { host: string; port: number };
  /** Plain HTTP /metrics and /healthz; undefined: none. */
  metricsListen: { host: string; port: number } | undefined;
  caFile: string;
  tlsCertFile: string;
  tlsKeyFile: string;
}

/** `edgeadm agent node-tunnel`. */
export interface NodeTunnelAgentRequest {
  /** `https://host:port` */
  server: string;
  caFile: string;
  nodeName: string;
  credentialsFile: string;
  kubelet: { host: string; port: number };
}

function invalid(message: string): ValidationError {
  return new ValidationError(message, { code: 'E_NODE_TUNNEL_FLAG' });
}

function absolute(path: string, flag: string): string {
  if (!isAbsolute(path)) throw invalid(`--${flag} must be an absolute path, not ${JSON.stringify(path)}`);
  return path;
}

function hostPort(value: string, flag: string): { host: string; port: number } {
  const parsed = parseAuthority(value);
  if (!parsed) throw invalid(`--${flag} must be HOST:PORT, not ${JSON.stringify(value)}`);
  return { host: parsed.host, port: parsed.port };
}

/** @throws {ValidationError} `E_NODE_TUNNEL_FLAG` */
export function parseNodeTunnelServerRequest(flags: {
  kubeconfig: string;
  socket: string;
  listen: string;
  'metrics-listen': string;
  'ca-file': string;
  'tls-cert': string;
  'tls-key': string;
}): NodeTunnelServerRequest {
  return {
    kubeconfigPath: absolute(flags.kubeconfig, 'kubeconfig'),
    socketPath: absolute(flags.socket, 'socket'),
    listen: hostPort(flags.listen, 'listen'),
    metricsListen: flags['metrics-listen'] === 'none' ? undefined : hostPort(flags['metrics-listen'], 'metrics-listen'),
    caFile: absolute(flags['ca-file'], 'ca-file'),
    tlsCertFile: absolute(flags['tls-cert'], 'tls-cert'),
    tlsKeyFile: absolute(flags['tls-key'], 'tls-key'),
  };
}

const NODE_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** @throws {ValidationError} `E_NODE_TUNNEL_FLAG` */
export function parseNodeTunnelAgentRequest(flags: {
  server: string;
  'ca-file': string;
  'node-name': string;
  credentials: string;
  kubelet: string;
}): NodeTunnelAgentRequest {
  let url: URL;
  try {
    url = new URL(flags.server);
  } catch {
    throw invalid(`--server must be https://HOST:PORT, not ${JSON.stringify(flags.server)}`);
  }
  if (url.protocol !== 'https:' || url.pathname !== '/' || url.search !== '' || url.username !== '') {
    throw invalid(`--server must be https://HOST:PORT, not ${JSON.stringify(flags.server)}`);
  }
  if (!NODE_NAME.test(flags['node-name'])) {
    throw invalid(`--node-name ${JSON.stringify(flags['node-name'])} is not a node name (a DNS subdomain)`);
  }
  return {
    server: url.origin,
    caFile: absolute(flags['ca-file'], 'ca-file'),
    nodeName: flags['node-name'],
    credentialsFile: absolute(flags.credentials, 'credentials'),
    kubelet: hostPort(flags.kubelet, 'kubelet'),
  };
}
