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
