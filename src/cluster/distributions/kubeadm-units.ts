/**
 * The kubeadm distribution's systemd units (kubelet, its kubeadm drop-in,
 * containerd), embedded so that the single binary (which has no files beside
 * it) can write them. assets/systemd/ holds the same text as files for
 * review and packaging; a unit test keeps the two identical.
 */

/** assets/systemd/kubelet.service */
export const KUBELET_UNIT = `[Unit]
Description=kubelet: the Kubernetes node agent, installed by edgeadm
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target containerd.service

[Service]
ExecStart=/usr/local/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
`;

/** assets/systemd/kubelet.service.d/10-kubeadm.conf */
export const KUBELET_KUBEADM_DROP_IN = `# Installed by edgeadm for kubeadm: the kubelet's flags come from the files kubeadm init and join write.
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# kubeadm init and join write this file with KUBELET_KUBEADM_ARGS.
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# The operator's last-resort overrides (KUBELET_EXTRA_ARGS).
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/local/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
`;

/** assets/systemd/containerd.service */
export const CONTAINERD_UNIT = `[Unit]
Description=containerd container runtime, installed by edgeadm
Documentation=https://containerd.io
After=network.target local-fs.target

[Service]
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/local/bin/containerd --config /etc/containerd/config.toml
Type=notify
Delegate=yes
KillMode=process
Restart=always
RestartSec=5
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
OOMScoreAdjust=-999

[Install]
WantedBy=multi-user.target
`;
