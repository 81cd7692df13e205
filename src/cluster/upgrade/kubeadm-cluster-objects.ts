/**
 * The cluster-wide objects `kubeadm upgrade apply` rewrites, kept before it
 * runs on an HA control plane and put back when that control plane is
 * rolled back.
 *
 * `kubeadm upgrade apply` changes more than its own host: it uploads the new
 * ClusterConfiguration (kubeadm-config, whose kubernetesVersion tells every
 * later control plane to run `kubeadm upgrade node` instead) and the new
 * kubelet configuration (kubelet-config), and upgrades the kube-proxy and
 * CoreDNS addons (kubeadm cmd/kubeadm/app/cmd/phases/upgrade/apply:
 * upload-config, addon). On a single control plane the datastore backup
 * puts all of that back. In an HA control plane the datastore is the
 * peers' and is not restored, so without this a rolled-back control plane
 * would leave the cluster recording a version none of its control planes
 * runs, and the next `upgrade apply` would skip `kubeadm upgrade apply`.
 *
 * The objects are kept once per upgrade, beside the backup, only by the
 * control plane that runs `kubeadm upgrade apply`: the file's presence is
 * what tells a rollback (or a resumed one) that the cluster's objects are
 * this upgrade's to put back.
 */
import type { Host } from '../../hosts/host.js';
import { KubeClient } from '../../kube/client.js';
import { kubeCredentialsOf } from '../../kube/kubeconfig.js';
import type { Distribution } from '../distributions/distribution.js';
import { readHostFile } from '../host-files.js';
import { reachableServer } from './plan.js';
import { UPGRADE_BACKUP_DIR } from './upgrade-state.js';

/** Where the objects are kept, beside the backup (a new backup replaces the directory, and with it this file). */
export const CLUSTER_OBJECTS_BACKUP = `${UPGRADE_BACKUP_DIR}/cluster-objects.json`;

/** One object `kubeadm upgrade apply` rewrites, and the part of it that it rewrites. */
interface ApplyWrittenObject {
  path: string;
  field: 'data' | 'spec';
}

/** What `kubeadm upgrade apply` rewrites in kube-system (upload-config, then the addons). */
export const KUBEADM_APPLY_WRITTEN_OBJECTS: readonly ApplyWrittenObject[] = [
  { path: '/api/v1/namespaces/kube-system/configmaps/kubeadm-config', field: 'data' },
  { path: '/api/v1/namespaces/kube-system/configmaps/kubelet-config', field: 'data' },
  { path: '/api/v1/namespaces/kube-system/configmaps/kube-proxy', field: 'data' },
  { path: '/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy', field: 'spec' },
  { path: '/api/v1/namespaces/kube-system/configmaps/coredns', field: 'data' },
  { path: '/apis/apps/v1/namespaces/kube-system/deployments/coredns', field: 'spec' },
];

/** The kept file: each object's rewritten part as it was, or null when the object did not exist. */
interface KeptObjects {
  version: 1;
  objects: Array<ApplyWrittenObject & { value: unknown }>;
}

/** An admin client of the cluster, from the control plane's admin kubeconfig (as kubeadm itself reads it). */
export async function kubeadmAdminClient(host: Host, distribution: Distribution): Promise<KubeClient> {
  const credentials = await kubeCredentialsOf(await readHostFile(host, distribution.adminKubeconfigPath), {
    what: `${host.name}:${distribution.adminKubeconfigPath}`,
    readFile: (path) => readHostFile(host, path),
  });
  return new KubeClient({ ...credentials, server: await reachableServer(host, distribution, credentials) });
}

async function isKept(host: Host): Promise<boolean> {
  return (await host.exec(`test -f ${CLUSTER_OBJECTS_BACKUP}`, { sudo: true, readOnly: true })).exitCode === 0;
}

/**
 * Keeps the objects `kubeadm upgrade apply` is about to rewrite; a second
 * call for the same upgrade keeps the first copy (the one from before
 * `kubeadm upgrade apply` ever ran). Returns whether it wrote the file.
 */
export async function keepApplyWrittenObjects(host: Host, distribution: Distribution): Promise<boolean> {
  if (await isKept(host)) return false;
  const client = await kubeadmAdminClient(host, distribution);
  try {
    const kept: KeptObjects = { version: 1, objects: [] };
    for (const object of KUBEADM_APPLY_WRITTEN_OBJECTS) {
      const found = await client.get<{ metadata: { name: string }; [field: string]: unknown }>(object.path);
      kept.objects.push({ ...object, value: found === undefined ? null : (found[object.field] ?? null) });
    }
    await host.put(Buffer.from(`${JSON.stringify(kept, null, 2)}\n`), CLUSTER_OBJECTS_BACKUP, {
      mode: 0o600,
      sudo: true,
      description: `keep the cluster objects kubeadm upgrade apply rewrites in ${CLUSTER_OBJECTS_BACKUP}`,
    });
    return true;
  } finally {
    client.close();
  }
}

/**
 * Puts back what {@link keepApplyWrittenObjects} kept (nothing when this
 * upgrade did not run `kubeadm upgrade apply`). Each object that exists gets
 * its kept part back; an object that did not exist before is left alone.
 * Putting back twice changes nothing more, so a resumed rollback may repeat it.
 * Returns how many objects were put back.
 */
export async function restoreApplyWrittenObjects(host: Host, distribution: Distribution): Promise<number> {
  if (!(await isKept(host))) return 0;
  const kept = JSON.parse(await readHostFile(host, CLUSTER_OBJECTS_BACKUP)) as KeptObjects;
  const client = await kubeadmAdminClient(host, distribution);
  let restored = 0;
  try {
    for (const object of kept.objects) {
      if (object.value === null) continue;
      const current = await client.get<{ metadata: { name: string }; [field: string]: unknown }>(object.path);
      if (current === undefined) continue;
      await client.replace(object.path, { ...current, [object.field]: object.value });
      restored += 1;
    }
    return restored;
  } finally {
    client.close();
  }
}
