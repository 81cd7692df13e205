import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  filterEndpointSlice,
  filterEndpointSliceAnswer,
  filterEndpointSliceEvent,
  isEndpointSlicePath,
} from '../../../src/sites/endpoint-filter.js';

const gridLabels = { 'edgeadm.io/site-grid': 'menu', 'kubernetes.io/service-name': 'menu' };
const slice = (labels: Record<string, string>, zones: Array<string | undefined>) => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: 'menu-abc', labels },
  endpoints: zones.map((zone, i) => ({ addresses: [`10.42.0.${i}`], ...(zone === undefined ? {} : { zone }) })),
});

describe('the edge filter of grid EndpointSlices', () => {
  it("keeps a grid Service's endpoints in the node's site only", () => {
    const filtered = filterEndpointSlice(slice(gridLabels, ['lyon', 'nice', 'lyon', undefined]), 'lyon');
    expect(filtered.endpoints.map((e) => e.addresses[0])).toEqual(['10.42.0.0', '10.42.0.2']);
  });

  it('leaves other Services and the per-site Services whole', () => {
    const other = slice({ 'kubernetes.io/service-name': 'web' }, ['lyon', 'nice']);
    expect(filterEndpointSlice(other, 'lyon')).toBe(other);
    const perSite = slice({ ...gridLabels, 'edgeadm.io/site': 'nice' }, ['nice']);
    expect(filterEndpointSlice(perSite, 'lyon')).toBe(perSite);
  });

  it('filters lists, single slices and watch events, and passes anything else through byte for byte', () => {
    const list = {
      kind: 'EndpointSliceList',
      metadata: { resourceVersion: '5' },
      items: [slice(gridLabels, ['lyon', 'nice'])],
    };
    expect(JSON.parse(filterEndpointSliceAnswer(JSON.stringify(list), 'nice')).items[0].endpoints).toEqual([
      { addresses: ['10.42.0.1'], zone: 'nice' },
    ]);
    const event = JSON.stringify({ type: 'MODIFIED', object: slice(gridLabels, ['lyon', 'nice']) });
    expect(JSON.parse(filterEndpointSliceEvent(event, 'lyon')).object.endpoints).toEqual([
      { addresses: ['10.42.0.0'], zone: 'lyon' },
    ]);
    for (const text of ['not json', '{"kind":"Status","code":410}', '{"type":"BOOKMARK","object":{"metadata":{}}}']) {
      expect(filterEndpointSliceAnswer(text, 'lyon')).toBe(text);
      expect(filterEndpointSliceEvent(text, 'lyon')).toBe(text);
    }
  });

  it('knows the EndpointSlice paths kube-proxy reads', () => {
    expect(isEndpointSlicePath('/apis/discovery.k8s.io/v1/endpointslices')).toBe(true);
    expect(isEndpointSlicePath('/apis/discovery.k8s.io/v1/namespaces/shops/endpointslices/menu-abc')).toBe(true);
    expect(isEndpointSlicePath('/apis/discovery.k8s.io/v1/endpointslicesx')).toBe(false);
    expect(isEndpointSlicePath('/api/v1/endpoints')).toBe(false);
  });

  it('never leaves an endpoint of another site, and never drops one of its own (generated)', () => {
    const zones = fc.array(fc.option(fc.constantFrom('lyon', 'nice', 'paris'), { nil: undefined }), { maxLength: 20 });
    fc.assert(
      fc.property(zones, fc.constantFrom('lyon', 'nice'), (list, site) => {
        const filtered = filterEndpointSlice(slice(gridLabels, list), site);
        expect(filtered.endpoints.every((e) => e.zone === site)).toBe(true);
        expect(filtered.endpoints.length).toBe(list.filter((zone) => zone === site).length);
      }),
    );
  });
});
