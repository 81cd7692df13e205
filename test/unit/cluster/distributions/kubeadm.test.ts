import { readFileSync } from 'node:fs';
import { loadAll } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import {
  KUBEADM_SKIPPED_INIT_PHASES,
  isKubeletSettableLabel,
  kubeadmBootstrapObjects,
  kubeadmTaintOf,
  kubeadmDistribution,
  renderContainerdConfig,
  renderKubeadmInitConfig,
  renderKubeadmJoinConfig,
} from '../../../../src/cluster/distributions/kubeadm.js';
import {
  CONTAINERD_UNIT,
  KUBELET_EDGE_DROP_IN_NAME,
  KUBELET_KUBEADM_DROP_IN,
  KUBELET_UNIT,
  renderKubeletEdgeDropIn,
} from '../../../../src/cluster/distributions/kubeadm-units.js';
import { renderKubeadmUpgradeConfig } from '../../../../src/cluster/upgrade/kubeadm-upgrade-phases.js';
import { effectiveUnitOf } from '../../../../src/hosts/direct-unit.js';
import { apiServerEgress } from '../../../../src/node-tunnel/egress-config.js';
import { EGRESS_CONFIG_PATH, EGRESS_DIR } from '../../../../src/node-tunnel/limits.js';

const execStartOf = (content: string): string => effectiveUnitOf({ name: 'unit.service', content }).execStart;
import { caPinsOfPem } from '../../../../src/trust/ca-pin.js';
import { createCa } from '../../../../src/trust/pki.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read parsed kubeadm YAML
type Doc = Record<string, any>;

describe('kubeadm init configuration', () => {
  const docs = loadAll(
    renderKubeadmInitConfig({
      nodeName: 'cp-1',
      nodeLabels: { site: 'store-42', 'node-role.kubernetes.io/edge': 'true', 'node.kubernetes.io/pool': 'a' },
      advertiseAddress: '10.0.0.10',
      certSans: ['api.example.com', '10.0.0.10'],
      podCidr: '10.42.0.0/16',
      serviceCidr: '10.43.0.0/16',
      kubernetesVersion: 'v1.30.4',
    }),
  ) as Doc[];

  it('is an InitConfiguration, a ClusterConfiguration and a KubeletConfiguration in v1beta4', () => {
    expect(docs.map((d) => `${d.apiVersion} ${d.kind}`)).toEqual([
      'kubeadm.k8s.io/v1beta4 InitConfiguration',
      'kubeadm.k8s.io/v1beta4 ClusterConfiguration',
      'kubelet.config.k8s.io/v1beta1 KubeletConfiguration',
    ]);
  });

  it('advertises the address, pins the version, the networks and the SANs', () => {
    const [init, cluster, kubelet] = docs as [Doc, Doc, Doc];
    expect(init.localAPIEndpoint).toEqual({ advertiseAddress: '10.0.0.10', bindPort: 6443 });
    expect(init.nodeRegistration.name).toBe('cp-1');
    expect(init.nodeRegistration.criSocket).toBe('unix:///run/containerd/containerd.sock');
    expect(cluster.kubernetesVersion).toBe('v1.30.4');
    expect(cluster.controlPlaneEndpoint).toBe('10.0.0.10:6443');
    expect(cluster.apiServer.certSANs).toEqual(['10.0.0.10', 'api.example.com']);
    expect(cluster.networking).toEqual({ podSubnet: '10.42.0.0/16', serviceSubnet: '10.43.0.0/16' });
    expect(kubelet.cgroupDriver).toBe('systemd');
  });

  it("skips kubeadm's own bootstrap token and join command, which edgeadm makes", () => {
    expect(docs[0]!.skipPhases).toEqual([...KUBEADM_SKIPPED_INIT_PHASES]);
    expect(KUBEADM_SKIPPED_INIT_PHASES).toContain('bootstrap-token');
  });

  it('gives the kubelet only the labels it may set on its own Node', () => {
    expect(docs[0]!.nodeRegistration.kubeletExtraArgs).toEqual([
      { name: 'node-labels', value: 'site=store-42,node.kubernetes.io/pool=a' },
    ]);
    expect(isKubeletSettableLabel('node-role.kubernetes.io/edge')).toBe(false);
    expect(isKubeletSettableLabel('example.k8s.io/x')).toBe(false);
    expect(isKubeletSettableLabel('kubelet.kubernetes.io/x')).toBe(true);
    expect(isKubeletSettableLabel('example.com/x')).toBe(true);
  });
});

describe('kubeadm init configuration of an edge cluster (the node tunnel)', () => {
  const input = {
    nodeName: 'cp-1',
    nodeLabels: {},
    advertiseAddress: '10.0.0.10',
    certSans: [],
    kubernetesVersion: 'v1.34.4',
  };
  const clusterOf = (text: string): Doc => (loadAll(text) as Doc[]).find((d) => d.kind === 'ClusterConfiguration')!;

  it("puts the egress selector's flag and volume in the ClusterConfiguration, which kubeadm upgrade apply, upgrade node and join --control-plane make the API server's manifest from", () => {
    const cluster = clusterOf(renderKubeadmInitConfig({ ...input, isEgressThroughNodeTunnel: true }));
    // kubeadm keeps this document in kube-system/kubeadm-config and writes every control plane's
    // kube-apiserver manifest from it again: what is here survives an upgrade; an edit of the
    // manifest alone would not.
    expect(cluster.apiServer.extraArgs).toEqual(apiServerEgress().extraArgs);
    expect(cluster.apiServer.extraArgs).toContainEqual({
      name: 'egress-selector-config-file',
      value: EGRESS_CONFIG_PATH,
    });
    expect(cluster.apiServer.extraVolumes).toEqual(apiServerEgress().extraVolumes);
    expect(cluster.apiServer.extraVolumes).toContainEqual(
      expect.objectContaining({ hostPath: EGRESS_DIR, mountPath: EGRESS_DIR }),
    );
    expect(cluster.apiServer.certSANs).toEqual(['10.0.0.10']);
  });

  it('gives a cluster without --enable-edge no egress selector', () => {
    const cluster = clusterOf(renderKubeadmInitConfig(input));
    expect(cluster.apiServer.extraArgs).toBeUndefined();
    expect(cluster.apiServer.extraVolumes).toBeUndefined();
  });

  it("has reset remove kubeadm upgrade's backups (a copy of etcd's data), which kubeadm reset leaves", () => {
    expect(kubeadmDistribution.ownedDirectories).toContain('/etc/kubernetes/tmp');
  });

  it("upgrade apply gives kubeadm an UpgradeConfiguration only: the API server's flags come from the cluster's ClusterConfiguration", () => {
    const docs = loadAll(renderKubeadmUpgradeConfig('v1.34.4')) as Doc[];
    expect(docs.map((d) => d.kind)).toEqual(['UpgradeConfiguration']);
    expect(JSON.stringify(docs)).not.toMatch(/apiServer|extraArgs|extraVolumes/);
  });
});

describe('kubeadm join configuration', () => {
  it('discovers the verified server with the bootstrap token, pinned to the verified CA', async () => {
    const ca = await createCa({ commonName: 'test-ca' });
    const credential = kubeadmDistribution.joinCredential({
      caPem: ca.certPem,
      token: { id: 'abcdef', secret: '0123456789abcdef' },
    });
    expect(credential).toBe('abcdef.0123456789abcdef');
    const [join] = loadAll(
      renderKubeadmJoinConfig({
        nodeName: 'edge-1',
        nodeLabels: { site: 'a' },
        server: 'https://10.0.0.10:6443',
        joinCredential: credential,
        caPem: ca.certPem,
      }),
    ) as Doc[];
    expect(join!.apiVersion).toBe('kubeadm.k8s.io/v1beta4');
    expect(join!.kind).toBe('JoinConfiguration');
    expect(join!.discovery.bootstrapToken).toEqual({
      apiServerEndpoint: '10.0.0.10:6443',
      token: 'abcdef.0123456789abcdef',
      caCertHashes: caPinsOfPem(ca.certPem),
    });
    expect(join!.nodeRegistration).toMatchObject({
      name: 'edge-1',
      kubeletExtraArgs: [{ name: 'node-labels', value: 'site=a' }],
    });
  });

  it('refuses to render without the verified CA (no unpinned kubeadm join)', () => {
    expect(() =>
      renderKubeadmJoinConfig({
        nodeName: 'edge-1',
        nodeLabels: {},
        server: 'https://10.0.0.10:6443',
        joinCredential: 'abcdef.0123456789abcdef',
      }),
    ).toThrow(expect.objectContaining({ code: 'E_KUBEADM_NO_CA' }));
  });
});

describe('containerd', () => {
  it('runs runc with systemd cgroups on the socket the kubelet uses', () => {
    const text = renderContainerdConfig();
    expect(text).toMatch(
      /\[plugins\."io\.containerd\.grpc\.v1\.cri"\.containerd\.runtimes\.runc\.options\]\n\s+SystemdCgroup = true/,
    );
    expect(text).toContain(`address = "${kubeadmDistribution.runtime!.socketPath}"`);
    expect(text).toContain(`bin_dir = "${kubeadmDistribution.runtime!.cniBinDir}"`);
  });

  it('runs runc with cgroupfs on a host without systemd, as the kubelet there is told to', () => {
    expect(renderContainerdConfig({ cgroupDriver: 'cgroupfs', isOomScoreRestricted: false })).toMatch(
      /\n\s+SystemdCgroup = false\n/,
    );
  });

  it('keeps OOM scores at or above its own only on a host that cannot lower them', () => {
    expect(renderContainerdConfig({ cgroupDriver: 'systemd', isOomScoreRestricted: true })).toContain(
      '\n  restrict_oom_score_adj = true\n',
    );
    expect(renderContainerdConfig()).not.toContain('restrict_oom_score_adj');
  });

  it('imports airgap images into the namespace the kubelet takes images from, quoting the path', () => {
    expect(kubeadmDistribution.runtime!.imageImportCommand("/pkg/images/it's.tar")).toBe(
      "/usr/local/bin/ctr --address /run/containerd/containerd.sock -n k8s.io images import '/pkg/images/it'\\''s.tar'",
    );
  });
});

describe('kubeadm units', () => {
  const asset = (path: string) => readFileSync(new URL(`../../../../assets/systemd/${path}`, import.meta.url), 'utf8');

  it('are embedded byte for byte as in assets/systemd', () => {
    expect(KUBELET_UNIT).toBe(asset('kubelet.service'));
    expect(KUBELET_KUBEADM_DROP_IN).toBe(asset('kubelet.service.d/10-kubeadm.conf'));
    expect(CONTAINERD_UNIT).toBe(asset('containerd.service'));
  });

  it('start the installed kubelet (with the drop-in) and containerd with its config', () => {
    const kubelet = kubeadmDistribution.serviceUnit('worker');
    expect(kubelet.name).toBe('kubelet.service');
    expect(execStartOf(kubelet.content)).toBe('/usr/local/bin/kubelet');
    expect(kubelet.dropIns?.map((d) => d.name)).toEqual(['10-kubeadm.conf']);
    expect(KUBELET_KUBEADM_DROP_IN).toContain('--kubeconfig=/etc/kubernetes/kubelet.conf');
    expect(execStartOf(kubeadmDistribution.runtime!.serviceUnit.content)).toBe(
      '/usr/local/bin/containerd --config /etc/containerd/config.toml',
    );
  });
});

describe('the kubeadm driver', () => {
  it('runs kubeadm init and join on their config files, and kubeadm reset -f', () => {
    expect(kubeadmDistribution.setupCommand!('control-plane').command).toBe(
      '/usr/local/bin/kubeadm init --config /etc/kubernetes/edgeadm-kubeadm-init.yaml',
    );
    expect(kubeadmDistribution.setupCommand!('worker').command).toBe(
      '/usr/local/bin/kubeadm join --config /etc/kubernetes/edgeadm-kubeadm-join.yaml',
    );
    expect(kubeadmDistribution.resetCommand).toContain('/usr/local/bin/kubeadm reset -f');
  });

  it("binds kubeadm's node bootstrap roles to the group edgeadm's tokens carry", () => {
    const bindings = kubeadmBootstrapObjects().filter((o) => o.kind === 'ClusterRoleBinding') as Doc[];
    const byName = Object.fromEntries(bindings.map((b) => [b.metadata.name, b]));
    expect(byName['kubeadm:kubelet-bootstrap']!.roleRef.name).toBe('system:node-bootstrapper');
    expect(byName['kubeadm:kubelet-bootstrap']!.subjects).toEqual([
      {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Group',
        name: 'system:bootstrappers:kubeadm:default-node-token',
      },
    ]);
    expect(byName['kubeadm:node-autoapprove-bootstrap']!.roleRef.name).toBe(
      'system:certificates.k8s.io:certificatesigningrequests:nodeclient',
    );
    expect(byName['kubeadm:node-autoapprove-certificate-rotation']!.subjects[0].name).toBe('system:nodes');
  });
});

describe('kubeadm edge nodes (join --enable-edge)', () => {
  it('join with the edge taint in nodeRegistration.taints, and refuse a taint kubeadm could not read', async () => {
    const ca = await createCa({ commonName: 'test-ca' });
    const [join] = loadAll(
      renderKubeadmJoinConfig({
        nodeName: 'edge-1',
        nodeLabels: { 'edgeadm.io/edge': 'true' },
        nodeTaints: ['edgeadm.io/edge=true:NoSchedule', 'dedicated:NoExecute'],
        server: 'https://10.0.0.10:6443',
        joinCredential: 'abcdef.0123456789abcdef',
        caPem: ca.certPem,
        kubeletKubeconfig: '/etc/edgeadm/edge-proxy/kubelet.kubeconfig',
      }),
    ) as Doc[];
    expect(join!.nodeRegistration.taints).toEqual([
      { key: 'edgeadm.io/edge', value: 'true', effect: 'NoSchedule' },
      { key: 'dedicated', effect: 'NoExecute' },
    ]);
    expect(join!.nodeRegistration.kubeletExtraArgs).toEqual([{ name: 'node-labels', value: 'edgeadm.io/edge=true' }]);
    // The kubelet's kubeconfig is the unit's business, not kubeadm's: the configuration is the same without it.
    expect(JSON.stringify(join)).not.toContain('edge-proxy');
    expect(() => kubeadmTaintOf('edgeadm.io/edge=true')).toThrow(expect.objectContaining({ code: 'E_TAINT_INVALID' }));
  });

  it('send the kubelet to the edge-proxy with a drop-in of their own, after 10-kubeadm.conf', () => {
    const kubelet = kubeadmDistribution.serviceUnit('worker', {
      kubeletKubeconfig: '/etc/edgeadm/edge-proxy/kubelet.kubeconfig',
    });
    expect(kubelet.dropIns?.map((d) => d.name)).toEqual(['10-kubeadm.conf', KUBELET_EDGE_DROP_IN_NAME]);
    // systemd applies drop-ins in name order: the later value of the variable wins.
    expect([...kubelet.dropIns!.map((d) => d.name)].sort()).toEqual(kubelet.dropIns!.map((d) => d.name));
    const dropIn = kubelet.dropIns![1]!.content;
    expect(dropIn).toContain(
      'Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/edgeadm/edge-proxy/kubelet.kubeconfig"',
    );
    expect(KUBELET_KUBEADM_DROP_IN).toContain('$KUBELET_KUBECONFIG_ARGS');
    expect(renderKubeletEdgeDropIn('/x')).toBe(dropIn.replace('/etc/edgeadm/edge-proxy/kubelet.kubeconfig', '/x'));
  });

  it("check the kubelet's client certificate against kubeadm's cluster CA", () => {
    expect(kubeadmDistribution.nodeClientCaPath).toBe('/etc/kubernetes/pki/ca.crt');
  });
});
