import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { advertiseWarnings, reconcileAdminServer } from '../../../src/cli/hub-advertise.js';
import { loadHubConfig, writeHubConfig } from '../../../src/hub/contract/hub-config.js';

describe('hub serve: the address it advertises (newcomer point 21)', () => {
  it('warns when it listens everywhere and advertises 127.0.0.1', () => {
    const [warning] = advertiseWarnings({ listen: '0.0.0.0:9443', url: 'https://127.0.0.1:9443' });
    expect(warning).toContain('pass --advertise-address');
    expect(advertiseWarnings({ listen: '[::]:9443', url: 'https://127.0.0.1:9443' })).toHaveLength(1);
  });

  it('says nothing with --advertise-address, or when it listens on one address', () => {
    const url = 'https://hub.example.com:9443';
    expect(advertiseWarnings({ listen: '0.0.0.0:9443', advertiseAddress: 'hub.example.com', url })).toEqual([]);
    expect(advertiseWarnings({ listen: '10.0.0.5:9443', url: 'https://10.0.0.5:9443' })).toEqual([]);
  });

  it('warns when admin.yaml names another server than the one advertised now', () => {
    const warnings = advertiseWarnings({
      listen: '0.0.0.0:9443',
      advertiseAddress: 'hub.example.com',
      url: 'https://hub.example.com:9443',
      adminServer: 'https://127.0.0.1:9443',
    });
    expect(warnings).toEqual([
      'admin.yaml names the server https://127.0.0.1:9443 (from an earlier start), not https://hub.example.com:9443: edit its server: line, and hand out user configs again',
    ]);
  });
});

describe('hub serve: admin.yaml follows a later --advertise-address (newcomer point 21)', () => {
  const admin = {
    server: 'https://127.0.0.1:9443',
    caPem: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
    user: 'edgeadm-hub-admin',
    token: 'edgeadm-hub-admintoken',
  };

  function adminFile(): string {
    const path = join(mkdtempSync(join(tmpdir(), 'hub-admin-')), 'admin.yaml');
    writeHubConfig(path, admin);
    return path;
  }

  it('rewrites the server of admin.yaml, keeping its credential', () => {
    const path = adminFile();
    const result = reconcileAdminServer({
      adminConfigPath: path,
      listen: '0.0.0.0:9443',
      advertiseAddress: 'hub.example.com',
      url: 'https://hub.example.com:9443',
      isSharedStore: false,
    });
    expect(result.warnings).toEqual([]);
    expect(result.info[0]).toContain('admin config now names https://hub.example.com:9443');
    expect(loadHubConfig(path)).toEqual({ ...admin, server: 'https://hub.example.com:9443' });
  });

  it('leaves admin.yaml alone for replicas on etcd, and without --advertise-address', () => {
    const path = adminFile();
    reconcileAdminServer({
      adminConfigPath: path,
      listen: '0.0.0.0:9443',
      advertiseAddress: 'hub-a.example.com',
      url: 'https://hub-a.example.com:9443',
      isSharedStore: true,
    });
    const alone = reconcileAdminServer({
      adminConfigPath: path,
      listen: '10.0.0.5:9443',
      url: 'https://10.0.0.5:9443',
      isSharedStore: false,
    });
    expect(loadHubConfig(path).server).toBe(admin.server);
    expect(alone.warnings[0]).toContain('admin.yaml names the server https://127.0.0.1:9443');
  });
});
