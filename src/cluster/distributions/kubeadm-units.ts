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

/** The kubelet drop-in that `join --enable-edge` adds on a kubeadm node. */
export const KUBELET_EDGE_DROP_IN_NAME = '20-edgeadm-edge-proxy.conf';

/**
 * The drop-in that sends a kubeadm node's kubelet through the edge-proxy:
 * it sets `KUBELET_KUBECONFIG_ARGS` again, with `--kubeconfig` naming the
 * edge-proxy's kubeconfig; systemd applies drop-ins in name order, so it wins
 * over 10-kubeadm.conf's value.
 *
 * Why a drop-in of edgeadm's own, and not the files kubeadm writes:
 * /var/lib/kubelet/kubeadm-flags.env and /var/lib/kubelet/config.yaml are
 * kubeadm's (`kubeadm upgrade node` writes them again), and
 * /etc/kubernetes/kubelet.conf is the kubelet's identity (the edge-proxy's
 * upstream, and the file the kubelet writes after TLS bootstrap); a drop-in
 * under /etc/systemd/system/kubelet.service.d is touched by neither kubeadm
 * nor the kubelet, so it survives upgrades. The kubeconfig it names refers
 * to the same client certificate files as kubelet.conf
 * (/var/lib/kubelet/pki/kubelet-client-current.pem, which the kubelet
 * re-points when it rotates its certificate), so rotation keeps working.
 * /etc/default/kubelet (KUBELET_EXTRA_ARGS) is left to the operator.
 * `--bootstrap-kubeconfig` stays as kubeadm has it. Pure.
 */
export function renderKubeletEdgeDropIn(kubeletKubeconfig: string): string {
  return [
    '# Installed by edgeadm join --enable-edge; edgeadm reset removes it. The kubelet reaches the',
    '# API server through the edge-proxy (https://127.0.0.1:10261) with its own credentials.',
    '[Service]',
    `Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=${kubeletKubeconfig}"`,
    '',
  ].join('\n');
}
