/**
 * Limits of edgeadm's Kubernetes client side, in one place.
 */

/**
 * Largest kubeconfig, or file a kubeconfig refers to (CA bundle, client
 * certificate, key, token file), that edgeadm reads. Real ones are a few
 * KiB (a CA bundle of every public root is about 200 KiB); past this a
 * file is not a kubeconfig, and reading it would only fill memory.
 */
export const MAX_KUBECONFIG_FILE_BYTES = 4 * 1024 * 1024;
