/**
 * The tunnel agent's systemd unit, embedded so that the single binary
 * (which has no files beside it) can write it. assets/systemd/ holds the
 * same text as a file for review and packaging; a unit test keeps the two
 * identical.
 */

/** assets/systemd/edgeadm-tunnel-agent.service, with `{{EDGEADM_BIN}}` and `{{DATA_DIR}}` to fill in. */
export const TUNNEL_AGENT_UNIT_TEMPLATE = `# edgeadm tunnel agent: keeps this edge cluster's outbound tunnel to the
# cloud hub open, so that the hub's users reach the cluster's API server
# (impersonated, so the cluster's own RBAC decides). Written by
# \`edgeadm register-cloud\`; the state (hub address, hub CA, client
# certificate and key, upstream kubeconfig path) is under {{DATA_DIR}}.
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
NoNewPrivileges=true
ProtectSystem=strict
ProtectHome=read-only
ReadWritePaths={{DATA_DIR}}
PrivateTmp=true

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
