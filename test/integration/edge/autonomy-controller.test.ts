/**
 * The autonomy controller's pass (src/edge/autonomy-controller.ts) against
 * the simulated API server (not kube-apiserver) with its simulated node
 * lifecycle and DefaultTolerationSeconds admission on: pods on annotated
 * edge nodes get their node's duration, pods elsewhere and DaemonSet pods
 * keep what Kubernetes gave them, a second pass changes nothing, and a node
 * whose annotation changes has its pods brought to the new value.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcileAutonomy } from '../../../src/edge/autonomy-controller.js';
import { KubeClient, type KubeObject } from '../../../src/kube/client.js';
import {
  startSimApiServer,
  type KubeObject as SimObject,
  type SimApiServer,
} from '../../support/sim-apiserver/index.js';

let server: SimApiServer;
let client: KubeClient;

interface Pod extends KubeObject {
  spec: { tolerations?: Array<{ key?: string; effect?: string; tolerationSeconds?: number }> };
}

function node(name: string, labels: Record<string, string>, annotations: Record<string, string> = {}): SimObject {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels, annotations } };
}

async function createPod(name: string, nodeName: string, ownerKind?: string): Promise<void> {
  await client.create('/api/v1/namespaces/default/pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'default',
      ...(ownerKind ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: ownerKind, name: 'o', uid: 'u' }] } : {}),
    },
    spec: { nodeName, containers: [{ name: 'main', image: 'app' }] },
  });
}

async function seconds(name: string): Promise<Array<number | undefined>> {
  const pod = await client.get<Pod>(`/api/v1/namespaces/default/pods/${name}`);
  return (pod?.spec.tolerations ?? [])
    .filter((t) => t.effect === 'NoExecute' && t.key?.startsWith('node.kubernetes.io/'))
    .map((t) => t.tolerationSeconds);
}

beforeAll(async () => {
  server = await startSimApiServer({ nodeLifecycle: {} });
  client = new KubeClient({ server: server.url, caPem: server.caPem, token: server.adminToken, contextName: 'sim' });
  server.setObject(node('edge-1', { 'edgeadm.io/edge': 'true' }, { 'edgeadm.io/autonomy-duration': '24h0m0s' }));
  server.setObject(node('edge-2', { 'edgeadm.io/edge': 'true' }, { 'edgeadm.io/autonomy-duration': '0' }));
  server.setObject(node('cloud-1', {}, { 'edgeadm.io/autonomy-duration': '24h0m0s' }));
  await createPod('on-edge-1', 'edge-1');
  await createPod('rs-on-edge-1', 'edge-1', 'ReplicaSet');
  await createPod('ds-on-edge-1', 'edge-1', 'DaemonSet');
  await createPod('on-edge-2', 'edge-2');
  await createPod('on-cloud-1', 'cloud-1');
});

afterAll(async () => {
  await server.stop();
});

describe('reconcileAutonomy', () => {
  it("gives pods on edge nodes their node's duration and leaves the others as Kubernetes made them", async () => {
    const pass = await reconcileAutonomy(client);
    expect(pass.nodes).toBe(2);
    expect(pass.patched.sort()).toEqual(['default/on-edge-1', 'default/on-edge-2', 'default/rs-on-edge-1']);
    expect(pass.failed).toEqual([]);
    expect(await seconds('on-edge-1')).toEqual([86_400, 86_400]);
    expect(await seconds('rs-on-edge-1')).toEqual([86_400, 86_400]);
    expect(await seconds('on-edge-2')).toEqual([undefined, undefined]);
    expect(await seconds('ds-on-edge-1')).toEqual([300, 300]);
    // Not labelled an edge node: its annotation means nothing.
    expect(await seconds('on-cloud-1')).toEqual([300, 300]);
  });

  it('changes nothing on a second pass, and follows a changed annotation', async () => {
    expect((await reconcileAutonomy(client)).patched).toEqual([]);
    await client.mergePatch('/api/v1/nodes/edge-1', {
      metadata: { annotations: { 'edgeadm.io/autonomy-duration': '1m' } },
    });
    expect((await reconcileAutonomy(client)).patched.sort()).toEqual(['default/on-edge-1', 'default/rs-on-edge-1']);
    expect(await seconds('on-edge-1')).toEqual([60, 60]);
  });
});
