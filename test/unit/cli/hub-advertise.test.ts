import { describe, expect, it } from 'vitest';
import { advertiseWarnings } from '../../../src/cli/hub-advertise.js';

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
