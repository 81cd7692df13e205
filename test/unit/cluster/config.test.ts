import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import {
  initDefaults,
  parseNodeLabels,
  renderConfigDefaults,
  resolveInitSettings,
  resolveJoinSettings,
} from '../../../src/cluster/config.js';

describe('edgeadm configuration files', () => {
  it('init-defaults round-trips through --config', () => {
    const text = renderConfigDefaults('init');
    const settings = resolveInitSettings({ configText: text, flags: {} });
    expect(settings.podCidr).toBe('10.42.0.0/16');
    expect(settings.installPackage).toBe('./edge-k3s-v1.30.4-amd64.tar.gz');
    expect((load(text) as { kind: string }).kind).toBe('InitConfiguration');
  });

  it('a flag given wins over the file, and the file over the defaults', () => {
    const text = [
      'apiVersion: edgeadm.io/v1alpha1',
      'kind: InitConfiguration',
      'nodeName: from-file',
      'serviceCidr: 10.96.0.0/12',
    ].join('\n');
    const settings = resolveInitSettings({ configText: text, flags: { nodeName: 'from-flag', podCidr: undefined } });
    expect(settings.nodeName).toBe('from-flag');
    expect(settings.serviceCidr).toBe('10.96.0.0/12');
    expect(settings.podCidr).toBe(initDefaults().podCidr);
  });

  it('refuses a file of the wrong kind with a hint', () => {
    expect(() =>
      resolveJoinSettings({ configText: renderConfigDefaults('init'), configFile: 'x.yaml', flags: {} }),
    ).toThrow(expect.objectContaining({ code: 'E_CONFIG_INVALID', exitCode: 3 }));
  });

  it('parses --node-labels and refuses a label without a value', () => {
    expect(parseNodeLabels('a=1, b=x=y')).toEqual({ a: '1', b: 'x=y' });
    expect(parseNodeLabels(undefined)).toBeUndefined();
    expect(() => parseNodeLabels('novalue')).toThrow(expect.objectContaining({ code: 'E_FLAG_INVALID' }));
  });
});
