/**
 * Commands edgeadm prints for the operator to run carry every flag they
 * need (newcomer point 3): hub token create's register-cloud, token
 * create's join, and the E_EDGE_NOT_ENABLED hint.
 */
import { describe, expect, it } from 'vitest';
import { INSTALL_PACKAGE_PLACEHOLDER, renderJoinCommand } from '../../../src/cluster/join-command.js';
import { readEdgeSettings } from '../../../src/cluster/edge-settings.js';
import type { KubeClient } from '../../../src/kube/client.js';
import { isClusterName } from '../../../src/kube/names.js';
import { CLUSTER_NAME_PLACEHOLDER, renderRegisterCloudCommand } from '../../../src/hub-client/register-command.js';

const created = {
  token: 'abcdef.0123456789abcdef',
  id: 'abcdef',
  hub: 'hub.example.com:9443',
  caCertHash: `sha256:${'a'.repeat(64)}`,
};

describe('the register-cloud command hub token create prints', () => {
  it('names the cluster, required by register-cloud', () => {
    expect(renderRegisterCloudCommand(created as never, 'store-042')).toBe(
      `edgeadm register-cloud hub.example.com:9443 --token ${created.token} --hub-ca-cert-hash ${created.caCertHash} --name store-042`,
    );
  });

  it('without a name, carries a placeholder register-cloud refuses rather than a wrong name', () => {
    expect(renderRegisterCloudCommand(created as never)).toContain(`--name ${CLUSTER_NAME_PLACEHOLDER}`);
    expect(isClusterName(CLUSTER_NAME_PLACEHOLDER)).toBe(false);
  });
});

describe('the join command token create prints', () => {
  it('names the install package, required by join', () => {
    const command = renderJoinCommand({
      address: '10.0.0.10:6443',
      token: created.token,
      caPin: created.caCertHash,
      installPackagePath: INSTALL_PACKAGE_PLACEHOLDER,
      distribution: 'k3s',
      isEdge: true,
    });
    expect(command).toContain(`--install-pkg-path ${INSTALL_PACKAGE_PLACEHOLDER}`);
    expect(command).toMatch(/--enable-edge$/);
  });
});

describe('E_EDGE_NOT_ENABLED', () => {
  it('hints at an init that turns on the edge addons and the autonomy controller, with the flags init needs', async () => {
    const client = { server: 'https://10.0.0.10:6443', get: () => Promise.resolve(undefined) } as unknown as KubeClient;
    const error = (await readEdgeSettings(client).catch((e: unknown) => e)) as { code: string; hints: string[] };
    expect(error.code).toBe('E_EDGE_NOT_ENABLED');
    expect(error.hints[0]).toContain('edgeadm init --enable-edge --host CONTROL_PLANE --install-pkg-path PACKAGE');
    expect(error.hints[0]).toContain('autonomy controller');
  });
});
