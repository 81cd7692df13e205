/**
 * The numbers of the Kubernetes version skew policy
 * (https://kubernetes.io/releases/version-skew-policy/), each named, so that
 * the policy module (skew.ts) and its messages say the same thing.
 */

/** A control plane goes up at most this many minor versions in one upgrade (no skipping). */
export const MAX_CONTROL_PLANE_MINOR_STEP = 1;

/** In an HA control plane, the newest and oldest kube-apiserver are at most this many minor versions apart. */
export const MAX_API_SERVER_MINOR_SPREAD = 1;

/** A kubelet may be at most this many minor versions older than the kube-apiserver. */
export const MAX_KUBELET_MINOR_LAG = 3;

/** ...except a kubelet older than {@link LEGACY_KUBELET_BEFORE_MINOR}, which may lag at most this many. */
export const MAX_LEGACY_KUBELET_MINOR_LAG = 2;

/** Kubelets of Kubernetes 1.x below this minor follow {@link MAX_LEGACY_KUBELET_MINOR_LAG}. */
export const LEGACY_KUBELET_BEFORE_MINOR = 25;

/** How long each health gate of `upgrade apply` may take by default (`--gate-timeout`). */
export const DEFAULT_GATE_TIMEOUT_MS = 5 * 60_000;

/** How often a health gate asks again. */
export const GATE_POLL_MS = 500;

/** How long one request of a health gate may take before it counts as no answer. */
export const GATE_REQUEST_TIMEOUT_MS = 5_000;

/** How long making or restoring a backup (a tar of the k3s server directory) may take. */
export const BACKUP_TIMEOUT_MS = 10 * 60_000;

/** Room kept free on a file system beyond what the backup and the new files need (KiB). */
export const DISK_HEADROOM_KIB = 64 * 1024;

/**
 * How long the static Pods (etcd, kube-apiserver) may take to stop once their
 * manifests are moved aside, before the etcd data directory is archived: the
 * kubelet looks at its manifest directory every 20 s (fileCheckFrequency).
 */
export const STATIC_POD_STOP_TIMEOUT_MS = 90_000;

/** How long `kubeadm upgrade apply|node` may take (it waits up to 5 min per static Pod itself). */
export const KUBEADM_UPGRADE_TIMEOUT_MS = 15 * 60_000;

/** How long one airgap image archive may take to import during an upgrade. */
export const IMAGE_IMPORT_TIMEOUT_MS = 10 * 60_000;
