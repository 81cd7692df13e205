import { describe, expect, it } from 'vitest';
import { fleetHostConnectOptions } from '../../../src/fleet/host-connect.js';
import type { FleetHost } from '../../../src/fleet/inventory/types.js';

const host = (overrides: Partial<FleetHost>): FleetHost => ({
  name: 'h',
  address: '10.0.0.1',
  ssh: {},
  role: 'worker',
  groups: [],
  labels: {},
  isEdge: false,
  ...overrides,
});

describe('fleetHostConnectOptions', () => {
  const shared = new Map();
  it('lets the inventory win over the flags and shares the bastion map', () => {
    const options = fleetHostConnectOptions(
      host({ ssh: { user: 'admin', port: 2222, keyFile: '/k', jumps: ['ops@b'] } }),
      { keyFiles: ['/flag-key'], jumps: ['flag@b'], port: 22, acceptNewHostKeys: true },
      shared,
    );
    expect(options).toMatchObject({
      host: 'admin@10.0.0.1',
      port: 2222,
      keyFiles: ['/k'],
      jumps: ['ops@b'],
      acceptNewHostKeys: true,
    });
    expect(options.sharedJumps).toBe(shared);
  });

  it('keeps the flags where the inventory says nothing, and brackets IPv6 addresses', () => {
    const options = fleetHostConnectOptions(host({ address: '2001:db8::1' }), { jumps: ['flag@b'] }, shared);
    expect(options).toMatchObject({ host: '[2001:db8::1]', jumps: ['flag@b'] });
  });
});
