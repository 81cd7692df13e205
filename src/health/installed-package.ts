/**
 * Where a cluster keeps the record of the install package it was installed
 * or last upgraded from: the ConfigMap `kube-system/edgeadm-installed-package`,
 * written by `init` and by `upgrade` on the first control plane, read by the
 * cluster's agent for its health report (health/wire.ts), so the hub can say
 * which package (by manifest digest, and signer when a key was pinned) each
 * cluster runs.
 *
 * The record is a statement of the host that installed it, not a proof: whoever
 * may write ConfigMaps in kube-system may change it (SECURITY.md).
 */
import type { KubeObject } from '../kube/client.js';
import { parseHealthReport, type InstalledPackageView } from './wire.js';

/** Namespace of the record. */
export const INSTALLED_PACKAGE_NAMESPACE = 'kube-system';
/** Name of the record's ConfigMap. */
export const INSTALLED_PACKAGE_NAME = 'edgeadm-installed-package';
/** The API path the agent reads it from. */
export const INSTALLED_PACKAGE_PATH = `/api/v1/namespaces/${INSTALLED_PACKAGE_NAMESPACE}/configmaps/${INSTALLED_PACKAGE_NAME}`;

/** The ConfigMap that records `installed`. Pure. */
export function installedPackageObject(installed: InstalledPackageView): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: INSTALLED_PACKAGE_NAME,
      namespace: INSTALLED_PACKAGE_NAMESPACE,
      labels: { 'app.kubernetes.io/managed-by': 'edgeadm' },
    },
    data: {
      name: installed.name,
      version: installed.version,
      distribution: installed.distribution,
      manifestSha256: installed.manifestSha256,
      ...(installed.signer === undefined ? {} : { signer: installed.signer }),
      action: installed.action,
      at: installed.at,
    },
  };
}

/**
 * The record a ConfigMap holds, checked as a health report's package is
 * (the agent sends nothing the hub would refuse).
 *
 * @throws {Error} naming what is missing or wrong.
 */
export function installedPackageOf(configMap: unknown): InstalledPackageView {
  const data = (configMap as { data?: unknown } | null)?.data;
  if (typeof data !== 'object' || data === null) throw new Error(`${INSTALLED_PACKAGE_NAME} has no data`);
  const report = parseHealthReport({ certificates: [], package: data });
  return report.package as InstalledPackageView;
}
