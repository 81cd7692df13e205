/**
 * What a rolled-back first control plane of an HA kubeadm cluster puts back
 * (src/cluster/upgrade/kubeadm-cluster-objects.ts), against the SIMULATED
 * API server (test/support/sim-apiserver, not kube-apiserver) and a host
 * whose files are kept in memory: the copy kept before `kubeadm upgrade
 * apply` is the first one (a resumed run keeps it), the objects come back
 * from it however often the rollback runs, and a control plane that kept
 * nothing (it ran `kubeadm upgrade node`) touches nothing.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { KUBEADM_ADMIN_KUBECONFIG_PATH, kubeadmDistribution } from '../../../src/cluster/distributions/kubeadm.js';
import {
  CLUSTER_OBJECTS_BACKUP,
  keepApplyWrittenObjects,
  restoreApplyWrittenObjects,
} from '../../../src/cluster/upgrade/kubeadm-cluster-objects.js';
import type { Host } from '../../../src/hosts/host.js';
import { KubeClient } from '../../../src/kube/client.js';
import { startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';

const KUBEADM_CONFIG = '/api/v1/namespaces/kube-system/configmaps/kubeadm-config';
const KUBELET_CONFIG = '/api/v1/namespaces/kube-system/configmaps/kubelet-config';
const KUBE_PROXY = '/api/v1/namespaces/kube-system/configmaps/kube-proxy';

let server: SimApiServer;
let client: KubeClient;
let files: Map<string, string>;

/** A host whose files are `files`: it answers `test -f`, `cat` and `put`, and nothing else. */
function hostOf(): Host {
  return {
    name: 'root@cp-1:22',
    async exec(command: string) {
      const test = /^test -f (\S+)$/.exec(command);
      if (test) return { command, exitCode: files.has(test[1]!) ? 0 : 1, stdout: '', stderr: '' };
      const cat = /^cat '([^']+)'$/.exec(command);
      if (cat) {
        const text = files.get(cat[1]!);
        return text === undefined
          ? { command, exitCode: 1, stdout: '', stderr: 'No such file or directory' }
          : { command, exitCode: 0, stdout: text, stderr: '' };
      }
      throw new Error(`the test host does not run ${command}`);
    },
    async put(source: Buffer, path: string) {
      files.set(path, source.toString('utf8'));
      return { path };
    },
    async facts() {
      return { addresses: [{ family: 'inet', scope: 'global', address: '127.0.0.1' }] };
    },
  } as unknown as Host;
}

function configMap(name: string, data: Record<string, string>): void {
  server.setObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'kube-system' }, data });
}

async function dataOf(path: string): Promise<Record<string, string> | undefined> {
  return (await client.get<{ metadata: { name: string }; data?: Record<string, string> }>(path))?.data;
}

/** What `kubeadm upgrade apply` does to the objects it rewrites (upload-config, and an addon it creates). */
async function applyRewrites(): Promise<void> {
  for (const [path, data] of [
    [KUBEADM_CONFIG, { ClusterConfiguration: 'kubernetesVersion: v1.32.1\n' }],
    [KUBELET_CONFIG, { kubelet: 'v1.32' }],
  ] as const) {
    const current = await client.get<{ metadata: { name: string } }>(path);
    await client.replace(path, { ...current!, data });
  }
  configMap('kube-proxy', { config: 'created by apply' });
}

beforeAll(async () => {
  server = await startSimApiServer();
  client = new KubeClient({ server: server.url, caPem: server.caPem, token: server.adminToken, contextName: 'sim' });
});

afterAll(async () => {
  await server.stop();
});

beforeEach(async () => {
  files = new Map([[KUBEADM_ADMIN_KUBECONFIG_PATH, server.kubeconfig()]]);
  configMap('kubeadm-config', { ClusterConfiguration: 'kubernetesVersion: v1.31.4\n' });
  configMap('kubelet-config', { kubelet: 'v1.31' });
  await client.raw('DELETE', KUBE_PROXY);
});

describe('the cluster objects kubeadm upgrade apply rewrites', () => {
  it('are kept once, before apply: a resumed run keeps the first copy', async () => {
    const host = hostOf();
    expect(await keepApplyWrittenObjects(host, kubeadmDistribution)).toBe(true);
    const first = files.get(CLUSTER_OBJECTS_BACKUP);
    await applyRewrites();
    expect(await keepApplyWrittenObjects(host, kubeadmDistribution)).toBe(false);
    expect(files.get(CLUSTER_OBJECTS_BACKUP)).toBe(first);
    expect(first).toContain('kubernetesVersion: v1.31.4');
  });

  it('are put back by the rollback, as often as it runs; an object apply created is left alone', async () => {
    const host = hostOf();
    await keepApplyWrittenObjects(host, kubeadmDistribution);
    await applyRewrites();
    for (let run = 0; run < 2; run++) {
      expect(await restoreApplyWrittenObjects(host, kubeadmDistribution)).toBe(2);
      expect(await dataOf(KUBEADM_CONFIG)).toEqual({ ClusterConfiguration: 'kubernetesVersion: v1.31.4\n' });
      expect(await dataOf(KUBELET_CONFIG)).toEqual({ kubelet: 'v1.31' });
      expect(await dataOf(KUBE_PROXY)).toEqual({ config: 'created by apply' });
    }
  });

  it('are not touched by the rollback of a control plane that kept none (it ran kubeadm upgrade node)', async () => {
    await applyRewrites();
    expect(await restoreApplyWrittenObjects(hostOf(), kubeadmDistribution)).toBe(0);
    expect(await dataOf(KUBEADM_CONFIG)).toEqual({ ClusterConfiguration: 'kubernetesVersion: v1.32.1\n' });
  });
});
