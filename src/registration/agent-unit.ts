/**
 * The tunnel agent's systemd unit, embedded so that the single binary
 * (which has no files beside it) can write it. assets/systemd/ holds the
 * same text as a file for review and packaging; a unit test keeps the two
 * identical.
 */

/**
 * The system user (and group) the agent runs as: its own, unprivileged,
 * made by `register-cloud` when the host has none. It owns the data
 * directory and nothing else.
 */
export const TUNNEL_AGENT_USER = 'edgeadm-agent';

/** assets/systemd/edgeadm-tunnel-agent.service, with `{{EDGEADM_BIN}}` and `{{DATA_DIR}}` to fill in. */
export const TUNNEL_AGENT_UNIT_TEMPLATE = `# edgeadm tunnel agent: keeps this edge cluster's outbound tunnel to the
# cloud hub open, so that the hub's users reach the cluster's API server
# (impersonated, so the cluster's own RBAC decides). Written by
# \`edgeadm register-cloud\`; the state (hub address, hub CA, client
# certificate and key, upstream kubeconfig) is under {{DATA_DIR}}, owned by
# the agent's own system user edgeadm-agent (made by register-cloud).
#
# Template values: {{EDGEADM_BIN}} (path of the edgeadm binary),
# {{DATA_DIR}} (the --data-dir given to register-cloud).
[Unit]
Description=edgeadm tunnel agent (outbound reverse tunnel to the cloud hub)
Documentation=https://github.com/edgeadm/edgeadm
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
ExecStart={{EDGEADM_BIN}} agent tunnel --data-dir {{DATA_DIR}}
# The agent reconnects by itself with backoff; a restart is for crashes only.
Restart=always
RestartSec=5s
# Exit 4: the hub refused the agent for good (cluster deleted, certificate
# revoked or expired); a restart cannot help. Register the cluster again.
RestartPreventExitStatus=4
# SIGTERM drains open streams (bounded) before the process exits.
KillSignal=SIGTERM
TimeoutStopSec=20s
Environment=MALLOC_ARENA_MAX=2
# Run logs go under the data dir, the one place the service may write.
Environment=EDGEADM_HOME={{DATA_DIR}}
#
# Least privilege. The agent reads its data directory and dials out to the
# hub and the API server; it needs no root, no capability and no other file.
User=edgeadm-agent
Group=edgeadm-agent
UMask=0077
CapabilityBoundingSet=
AmbientCapabilities=
NoNewPrivileges=yes
# The whole file system read-only but the data dir; /home, /root and
# /run/user invisible (not merely read-only); a private /tmp and /dev.
ProtectSystem=strict
ReadWritePaths={{DATA_DIR}}
ProtectHome=yes
PrivateTmp=yes
PrivateMounts=yes
PrivateDevices=yes
DevicePolicy=closed
ProtectProc=invisible
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
# TCP to the hub and the API server, and the resolver's local socket.
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
RemoveIPC=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources
# A refused call fails with EPERM instead of killing the agent. None is
# expected: its tests run it with any call outside this list killing it.
SystemCallErrorNumber=EPERM
# No MemoryDenyWriteExecute=: the agent runs V8's JIT compilers, which need
# to make their code pages executable; V8 aborts at start without that.
#
# Memory: a connected agent measured 102-105 MiB RSS (README, "Units"),
# plus the tunnel's bounds (a 64 MiB HTTP/2 session memory cap and a 32 MiB
# connection window, see src/tunnel/limits.ts), with room to spare. Past MemoryHigh the kernel
# reclaims and slows the agent; MemoryMax is the hard stop (the agent is
# killed and restarted, and reconnects by itself).
MemoryHigh=256M
MemoryMax=384M

[Install]
WantedBy=multi-user.target
`;

/** The unit with its template values filled in. */
export function renderTunnelAgentUnit(values: { edgeadmBinary: string; dataDir: string }): string {
  return TUNNEL_AGENT_UNIT_TEMPLATE.replaceAll('{{EDGEADM_BIN}}', values.edgeadmBinary).replaceAll(
    '{{DATA_DIR}}',
    values.dataDir,
  );
}
