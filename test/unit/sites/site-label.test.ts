import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJoinRequest } from '../../../src/cluster/join-request.js';
import { isKubeletSettableLabel } from '../../../src/cluster/distributions/kubeadm.js';
import { isDns1123Label } from '../../../src/kube/names.js';
import { parseSiteName, SITE_LABEL, withSiteLabels, ZONE_LABEL } from '../../../src/sites/site-label.js';

function joinWith(flags: { site?: string; 'node-labels'?: string }) {
  return parseJoinRequest({
    endpoint: '10.0.0.10:6443',
    flags: {
      token: 'abcdef.0123456789abcdef',
      'discovery-token-ca-cert-hash': [`sha256:${'ab'.repeat(32)}`],
      'install-pkg-path': './pkg.tar.gz',
      ...flags,
    },
  });
}

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

describe('join --site', () => {
  it('labels the node with its site and the same zone, beside the other labels', () => {
    expect(joinWith({ site: 'shop-lyon-1', 'node-labels': 'tier=store' }).nodeLabels).toEqual({
      tier: 'store',
      [SITE_LABEL]: 'shop-lyon-1',
      [ZONE_LABEL]: 'shop-lyon-1',
    });
  });

  it('refuses a site that is not a DNS label before anything else happens, with E_SITE_INVALID', () => {
    for (const site of ['Shop', 'shop_1', '-shop', 'a'.repeat(64), '', 'shop.lyon']) {
      expect(codeOf(() => joinWith({ site }))).toBe('E_SITE_INVALID');
    }
  });

  it('refuses a site that disagrees with a zone or site given in --node-labels', () => {
    expect(codeOf(() => joinWith({ site: 'a', 'node-labels': `${ZONE_LABEL}=b` }))).toBe('E_FLAG_CONFLICT');
    expect(codeOf(() => joinWith({ site: 'a', 'node-labels': `${SITE_LABEL}=b` }))).toBe('E_FLAG_CONFLICT');
  });

  it('accepts exactly the DNS labels as site names', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 70 }), (name) => {
        expect(codeOf(() => parseSiteName(name)) === undefined).toBe(isDns1123Label(name));
      }),
    );
  });

  it('gives an inventory site label its zone, and leaves labels without a site as they are', () => {
    expect(withSiteLabels({ [SITE_LABEL]: 'b' })).toEqual({ [SITE_LABEL]: 'b', [ZONE_LABEL]: 'b' });
    expect(withSiteLabels({ tier: 'x' })).toEqual({ tier: 'x' });
    expect(codeOf(() => withSiteLabels({ [SITE_LABEL]: 'B_1' }))).toBe('E_SITE_INVALID');
  });

  it("lets the kubelet register with the zone (NodeRestriction allows it), so the site's first endpoints carry it", () => {
    expect(isKubeletSettableLabel(ZONE_LABEL)).toBe(true);
    expect(isKubeletSettableLabel(SITE_LABEL)).toBe(true);
    expect(isKubeletSettableLabel('topology.kubernetes.io/other')).toBe(false);
  });
});
