import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  loadHubConfig,
  parseHubConfig,
  renderHubConfig,
  resolveHubConfigPath,
  writeHubConfig,
} from '../../../../src/hub/contract/hub-config.js';

const config = {
  server: 'https://hub.example.com:9443',
  caPem: '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n',
  user: 'alice',
  token: 'edgeadm-hub-abc',
};

describe('hub config', () => {
  it('prefers --hub-config, then EDGEADM_HUB_CONFIG, then ~/.edgeadm/hub.yaml', () => {
    const env = { EDGEADM_HOME: '/home/op/.edgeadm', EDGEADM_HUB_CONFIG: '/etc/hub.yaml' };
    expect(resolveHubConfigPath('/tmp/mine.yaml', env)).toBe('/tmp/mine.yaml');
    expect(resolveHubConfigPath(undefined, env)).toBe('/etc/hub.yaml');
    expect(resolveHubConfigPath(undefined, { EDGEADM_HOME: '/home/op/.edgeadm' })).toBe('/home/op/.edgeadm/hub.yaml');
  });

  it('round-trips through a 0600 file', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'hub-config-')), 'hub.yaml');
    writeHubConfig(path, config);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(loadHubConfig(path, {})).toEqual(config);
  });

  it('refuses a config without a token, and says which file is missing', () => {
    const text = renderHubConfig(config).replace(/token: .*/, '');
    expect(() => parseHubConfig(text, 'x.yaml')).toThrow(expect.objectContaining({ code: 'E_HUB_CONFIG_INVALID' }));
    expect(() => loadHubConfig('/nonexistent/hub.yaml', {})).toThrow(
      expect.objectContaining({ code: 'E_HUB_CONFIG_MISSING' }),
    );
  });
});
