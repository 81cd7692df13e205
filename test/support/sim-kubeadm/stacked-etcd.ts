/**
 * The stacked etcd of a SIMULATED kubeadm (not kubeadm) HA control plane: a
 * REAL etcd (Debian's /usr/bin/etcd) per control plane, run by the
 * simulated kubelet from /etc/kubernetes/manifests/etcd.yaml, its data in
 * /var/lib/etcd. Traced to kubeadm cmd/kubeadm/app/phases/etcd/local.go and
 * cmd/kubeadm/app/util/etcd/etcd.go:
 *
 * - `kubeadm init` writes a manifest for a cluster of one: the member is
 *   named after the node, `--initial-cluster=<node>=<peer URL>`
 *   (CreateLocalEtcdStaticPodManifestFile);
 * - `kubeadm join --control-plane` adds its member through the existing
 *   cluster first, then writes a manifest with `--initial-cluster-state=
 *   existing` and the member list the add returned
 *   (CreateStackedEtcdStaticPodManifestFile): an add whose peer URL is a
 *   member already is not made twice (AddMember);
 * - `kubeadm reset` on a control plane removes its own member through the
 *   cluster (RemoveStackedEtcdMemberFromCluster); a member left behind would
 *   keep the cluster counting a voter that never answers.
 *
 * What differs, on purpose: plain HTTP between members and clients (kubeadm:
 * TLS with its etcd CA under /etc/kubernetes/pki/etcd); the member is added
 * as a voter (kubeadm ≥ 1.31 can add a learner first); the joining control
 * plane finds a member at the address of the API server it discovered
 * (kubeadm lists the control planes' API endpoints from the cluster).
 */
import { Etcd3 } from 'etcd3';
import { sleep } from '../sim-node.js';

/** etcd's client and peer ports, as kubeadm's stacked etcd uses them. */
export const ETCD_CLIENT_PORT = 2379;
export const ETCD_PEER_PORT = 2380;
/** How long a joining control plane keeps trying to add its member (kubeadm retries its add too). */
const MEMBER_ADD_TIMEOUT_MS = 90_000;
/** How long one attempt waits to reach a member. */
const DIAL_TIMEOUT_MS = 5_000;
/** Pause between attempts. */
const RETRY_INTERVAL_MS = 1_000;

/** The client URL of the member at `address`. */
export function etcdClientUrl(address: string): string {
  return `http://${address}:${ETCD_CLIENT_PORT}`;
}

/** The peer URL of the member at `address`. */
export function etcdPeerUrl(address: string): string {
  return `http://${address}:${ETCD_PEER_PORT}`;
}

/** The etcd static Pod kubeadm writes for the member `nodeName` at `address`. */
export function etcdManifest(input: {
  nodeName: string;
  address: string;
  dataDir: string;
  initialCluster: string;
  state: 'new' | 'existing';
}): Record<string, unknown> {
  const { nodeName, address, dataDir } = input;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'etcd',
      namespace: 'kube-system',
      labels: { component: 'etcd', tier: 'control-plane' },
      annotations: { 'kubeadm.kubernetes.io/etcd.advertise-client-urls': etcdClientUrl(address) },
    },
    spec: {
      hostNetwork: true,
      containers: [
        {
          name: 'etcd',
          image: 'registry.k8s.io/etcd:3.5.15-0',
          command: [
            'etcd',
            `--name=${nodeName}`,
            `--data-dir=${dataDir}`,
            `--listen-client-urls=http://127.0.0.1:${ETCD_CLIENT_PORT},${etcdClientUrl(address)}`,
            `--advertise-client-urls=${etcdClientUrl(address)}`,
            `--listen-peer-urls=${etcdPeerUrl(address)}`,
            `--initial-advertise-peer-urls=${etcdPeerUrl(address)}`,
            `--initial-cluster=${input.initialCluster}`,
            `--initial-cluster-state=${input.state}`,
          ],
        },
      ],
    },
  };
}

/**
 * Adds the member `nodeName` (peer URL at `address`) through the member at
 * `existingClientUrl`, retrying while etcd refuses (its strict
 * reconfiguration check refuses a voter until every member has been up a
 * while); returns the `--initial-cluster` value for the new member.
 */
export async function addStackedMember(
  existingClientUrl: string,
  nodeName: string,
  address: string,
  log: (line: string) => void,
): Promise<string> {
  const deadline = Date.now() + MEMBER_ADD_TIMEOUT_MS;
  for (;;) {
    try {
      return await addOnce(existingClientUrl, nodeName, etcdPeerUrl(address), log);
    } catch (error) {
      if (Date.now() > deadline) throw error;
      log(`[etcd] the member was not added yet (${(error as Error).message}); retrying`);
      await sleep(RETRY_INTERVAL_MS);
    }
  }
}

async function addOnce(
  clientUrl: string,
  nodeName: string,
  peerUrl: string,
  log: (line: string) => void,
): Promise<string> {
  const client = new Etcd3({ hosts: clientUrl, dialTimeout: DIAL_TIMEOUT_MS });
  try {
    const { members = [] } = await client.cluster.memberList({});
    const cluster: string[] = [];
    let isAdded = false;
    for (const member of members) {
      const peer = member.peerURLs?.[0];
      if (peer === undefined) continue;
      // An added member that has not started yet has no name: at our peer URL it is us (kubeadm's AddMember).
      const name = peer === peerUrl ? nodeName : member.name;
      if (peer === peerUrl) isAdded = true;
      cluster.push(`${name}=${peer}`);
    }
    if (!isAdded) {
      log(`[etcd] Adding etcd member: ${peerUrl}`);
      await client.cluster.memberAdd({ peerURLs: [peerUrl] });
      cluster.push(`${nodeName}=${peerUrl}`);
    }
    return cluster.join(',');
  } finally {
    client.close();
  }
}

/**
 * Removes the member with `peerUrl` through the first of `clientUrls` that
 * answers; false when none did (kubeadm's reset then warns and goes on).
 */
export async function removeStackedMember(
  clientUrls: string[],
  peerUrl: string,
  log: (line: string) => void,
): Promise<boolean> {
  for (const url of clientUrls) {
    const client = new Etcd3({ hosts: url, dialTimeout: DIAL_TIMEOUT_MS });
    try {
      const { members = [] } = await client.cluster.memberList({});
      const own = members.find((member) => member.peerURLs?.includes(peerUrl));
      if (own === undefined) return true;
      await client.cluster.memberRemove({ ID: own.ID });
      log(`[reset] Removed the etcd member ${own.name || peerUrl} from the cluster`);
      return true;
    } catch (error) {
      log(`[reset] could not remove the etcd member through ${url}: ${(error as Error).message}`);
    } finally {
      client.close();
    }
  }
  return false;
}
