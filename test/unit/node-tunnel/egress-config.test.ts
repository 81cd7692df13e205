import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { apiServerEgress, renderEgressSelectorConfiguration } from '../../../src/node-tunnel/egress-config.js';
import { EGRESS_CONFIG_PATH, EGRESS_DIR } from '../../../src/node-tunnel/limits.js';

describe('the egress selector configuration', () => {
  it("sends the cluster egress over HTTP CONNECT on the node tunnel's Unix socket", () => {
    expect(load(renderEgressSelectorConfiguration('/etc/kubernetes/edgeadm/egress.sock'))).toEqual({
      apiVersion: 'apiserver.k8s.io/v1beta1',
      kind: 'EgressSelectorConfiguration',
      egressSelections: [
        {
          name: 'cluster',
          connection: {
            proxyProtocol: 'HTTPConnect',
            transport: { uds: { udsName: '/etc/kubernetes/edgeadm/egress.sock' } },
          },
        },
      ],
    });
  });

  it("gives the API server the flag and mounts the socket's directory into its static pod, writable", () => {
    const egress = apiServerEgress();
    expect(egress.extraArgs).toEqual([{ name: 'egress-selector-config-file', value: EGRESS_CONFIG_PATH }]);
    expect(egress.extraVolumes).toEqual([
      expect.objectContaining({ hostPath: EGRESS_DIR, mountPath: EGRESS_DIR, readOnly: false }),
    ]);
  });
});
