/**
 * The edge-proxy systemd unit, embedded so that the single binary (which
 * has no files beside it) can write it on a node, and its rendering.
 * assets/systemd/edgeadm-edge-proxy.service holds the same text for review
 * and packaging; a unit test keeps the two identical.
 */
import { ValidationError } from '../errors.js';

/** The unit name. */
export const EDGE_PROXY_UNIT_NAME = 'edgeadm-edge-proxy.service';

/** assets/systemd/edgeadm-edge-proxy.service */
export const EDGE_PROXY_UNIT_TEMPLATE = `# edgeadm edge-proxy: the node-local caching API proxy that keeps this edge
# node working while its site is offline. Installed by
# "edgeadm join --enable-edge"; the node's kubelet uses
# https://127.0.0.1:10261 as its API server and trusts
# /var/lib/edgeadm/edge-proxy/pki/ca.crt.
#
# Template values: {{EDGEADM_BIN}} (path of the edgeadm binary),
# {{UPSTREAM_KUBECONFIG}} (the node's own kubeconfig: the API server, its CA
# and the node's credentials for the readiness probe), {{CACHE_MAX_BYTES}},
# {{CACHE_MAX_ENTRIES}}, and {{CLIENT_CERT_FLAGS}} (for a node that
# authenticates with a client certificate: --client-ca-file and
# --client-cert-map system:node:<name>=<cert>,<key>; empty for a token).
[Unit]
Description=edgeadm edge-proxy (node-local caching API proxy for offline autonomy)
Documentation=https://github.com/edgeadm/edgeadm
Wants=network-online.target
After=network-online.target
# The kubelet talks to the API server through this proxy.
Before=kubelet.service k3s-agent.service

[Service]
Type=simple
ExecStart={{EDGEADM_BIN}} agent edge-proxy \\
  --kubeconfig {{UPSTREAM_KUBECONFIG}} \\
  --listen 127.0.0.1:10261 \\
  --metrics-listen 127.0.0.1:10262 \\
  --cache-dir /var/lib/edgeadm/edge-proxy \\
  --cache-max-bytes {{CACHE_MAX_BYTES}} \\
  --cache-max-entries {{CACHE_MAX_ENTRIES}} \\
  --log-file /var/log/edgeadm/edge-proxy.log{{CLIENT_CERT_FLAGS}}
# Memory for a small, long-running process (see bench/edge-proxy/RESULTS.md):
# a small young generation, fewer glibc malloc arenas, and V8's interpreter
# only (--jitless: no optimising compilers and their code, about 15 MiB less
# RSS; edge-proxy's work is TLS, file reads and hashing, done in native code).
# Quoted: systemd splits an unquoted Environment= value at spaces.
Environment="NODE_OPTIONS=--max-semi-space-size=1 --jitless"
# glibc malloc: one arena (the proxy's work is on its main thread), and
# blocks of 128 KiB and more returned to the kernel when freed (a fixed
# threshold: glibc would otherwise raise it after the first large free).
# V8's --optimize-for-size is set by the agent itself (Node refuses it here).
Environment=MALLOC_ARENA_MAX=1 MALLOC_TRIM_THRESHOLD_=131072 MALLOC_MMAP_THRESHOLD_=131072
Restart=always
RestartSec=2
# The cache holds what the API server told each identity (Secrets included): root only.
UMask=0077
StateDirectory=edgeadm/edge-proxy
StateDirectoryMode=0700
LogsDirectory=edgeadm
LimitNOFILE=65536
#
# Least privilege. The proxy stays root only to read the node's kubeconfig
# and kubelet credentials (root's files, mode 0600) and to write its cache;
# it needs no capability for that (it owns them) nor to listen on
# 127.0.0.1:10261 and :10262 (ports above 1024).
CapabilityBoundingSet=
AmbientCapabilities=
NoNewPrivileges=yes
# The whole file system read-only but the cache and the log; /home, /root
# and /run/user invisible; a private /tmp and /dev.
ProtectSystem=strict
ReadWritePaths=/var/lib/edgeadm/edge-proxy
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
DevicePolicy=closed
PrivateMounts=yes
ProtectProc=invisible
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
# TCP to the API server and from the node's clients, and the resolver's
# local socket.
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources
# A refused call fails with EPERM instead of killing the proxy. None is
# expected: its tests run it with any call outside this list killing it.
SystemCallErrorNumber=EPERM
# --jitless above makes no executable memory, so none may be made: V8
# starts and runs under this (and aborts under it without --jitless).
MemoryDenyWriteExecute=yes
#
# Memory: 72-73 MiB RSS at start and 82-83 MiB under offline load with
# 1,000 cached objects, as deployed (BENCHMARKS.md, edge-proxy,
# 2026-11-24 22:09 UTC), and up to
# 282 MB measured under 12 concurrent 16 MiB LISTs being buffered for
# the cache. Past MemoryHigh the kernel reclaims (the cache's page cache
# first) and slows the proxy; MemoryMax is the hard stop (killed and
# restarted after 2 s; its cache is on disk, so it comes back with it).
MemoryHigh=320M
MemoryMax=512M

[Install]
WantedBy=multi-user.target
`;

/** What the unit's template values are made from. */
export interface EdgeProxyUnitInput {
  /** Absolute path of the edgeadm binary on the node. */
  edgeadmBin: string;
  /** The node's own kubeconfig (server, CA, the node's credentials). */
  upstreamKubeconfig: string;
  cacheMaxBytes: string;
  cacheMaxEntries: number;
  /** For a node authenticating with a client certificate: its CN, files, and the CA that signed it. */
  clientCertificate?: { commonName: string; certFile: string; keyFile: string; caFile: string };
  /**
   * For a k3s node (the agent's supervisor through the proxy): the node's
   * serving certificate the proxy serves with, and the agent's other client
   * certificates mapped to themselves. Rendered after the client
   * certificate flags, in the same place of the command line.
   */
  /** The node's site (join --site): grid Services' endpoints are kept to it (src/sites/endpoint-filter.ts). */
  site?: string;
  k3sSupervisor?: {
    servingCertFile: string;
    servingKeyFile: string;
    agentClientCertificates: ReadonlyArray<{ commonName: string; certFile: string; keyFile: string }>;
  };
}

/** Paths and names may not carry what systemd's command line would split or expand. */
const UNIT_SAFE = /^[A-Za-z0-9@%+=:,./_-]+$/;

function safe(value: string, what: string): string {
  if (!UNIT_SAFE.test(value)) {
    throw new ValidationError(`${what} ${JSON.stringify(value)} cannot go into the edge-proxy unit's command line`, {
      code: 'E_EDGE_UNIT_VALUE',
    });
  }
  return value;
}

/**
 * The unit text for a node. Pure.
 *
 * @throws {ValidationError} `E_EDGE_UNIT_VALUE` for a value with spaces,
 * quotes or `$`.
 */
export function renderEdgeProxyUnit(input: EdgeProxyUnitInput): string {
  const cert = input.clientCertificate;
  const certFlags = cert
    ? ` \\\n  --client-ca-file ${safe(cert.caFile, 'the client CA file')} \\\n  --client-cert-map ${safe(cert.commonName, 'the node identity')}=${safe(cert.certFile, 'the client certificate file')},${safe(cert.keyFile, 'the client key file')}`
    : '';
  const supervisor = input.k3sSupervisor;
  const supervisorFlags = supervisor
    ? [
        ` \\\n  --k3s-supervisor`,
        ` \\\n  --tls-cert ${safe(supervisor.servingCertFile, 'the serving certificate file')} --tls-key ${safe(supervisor.servingKeyFile, 'the serving key file')}`,
        ...supervisor.agentClientCertificates.map(
          (mapped) =>
            ` \\\n  --client-cert-map ${safe(mapped.commonName, 'an agent identity')}=${safe(mapped.certFile, 'a client certificate file')},${safe(mapped.keyFile, 'a client key file')}`,
        ),
      ].join('')
    : '';
  const siteFlag = input.site === undefined ? '' : ` \\\n  --site ${safe(input.site, 'the site')}`;
  // The comment that explains the template values goes; the values take its place.
  const lines = EDGE_PROXY_UNIT_TEMPLATE.split('\n');
  const start = lines.findIndex((line) => line.startsWith('# Template values:'));
  let end = start;
  while (end < lines.length && lines[end]!.startsWith('#')) end++;
  const template = [...lines.slice(0, Math.max(0, start - 1)), ...lines.slice(end)].join('\n');
  return template
    .replaceAll('{{EDGEADM_BIN}}', safe(input.edgeadmBin, 'the edgeadm binary path'))
    .replaceAll('{{UPSTREAM_KUBECONFIG}}', safe(input.upstreamKubeconfig, 'the node kubeconfig path'))
    .replaceAll('{{CACHE_MAX_BYTES}}', safe(input.cacheMaxBytes, 'the cache size'))
    .replaceAll('{{CACHE_MAX_ENTRIES}}', String(input.cacheMaxEntries))
    .replaceAll('{{CLIENT_CERT_FLAGS}}', certFlags + supervisorFlags + siteFlag);
}
