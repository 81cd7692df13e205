/**
 * The k3s systemd units, embedded so that the single binary (which has no
 * files beside it) can write them. assets/systemd/ holds the same text as
 * files for review and packaging; a unit test keeps the two identical.
 */

/** assets/systemd/k3s.service */
export const K3S_SERVER_UNIT = `[Unit]
Description=Lightweight Kubernetes (k3s server), installed by edgeadm
Documentation=https://docs.k3s.io
Wants=network-online.target
After=network-online.target

[Install]
WantedBy=multi-user.target

[Service]
Type=notify
KillMode=process
Delegate=yes
LimitNOFILE=1048576
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStartPre=-/sbin/modprobe br_netfilter
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/local/bin/k3s server
`;

/** assets/systemd/k3s-agent.service */
export const K3S_AGENT_UNIT = `[Unit]
Description=Lightweight Kubernetes (k3s agent), installed by edgeadm
Documentation=https://docs.k3s.io
Wants=network-online.target
After=network-online.target

[Install]
WantedBy=multi-user.target

[Service]
Type=notify
KillMode=process
Delegate=yes
LimitNOFILE=1048576
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStartPre=-/sbin/modprobe br_netfilter
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/local/bin/k3s agent
`;
