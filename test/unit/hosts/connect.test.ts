import { describe, expect, it } from 'vitest';
import { resolveSshChain } from '../../../src/hosts/connect.js';
import { memoryEnvironment } from './ssh-config-environment.js';

const CONFIG = [
  'Host edge-bastion',
  '  HostName 203.0.113.10',
  '  User jump',
  'Host inner-bastion',
  '  HostName 10.0.0.2',
  '  ProxyJump edge-bastion',
  'Host store-*',
  '  ProxyJump inner-bastion',
  '  IdentityFile ~/.ssh/stores',
  'Host loop-a',
  '  ProxyJump loop-b',
  'Host loop-b',
  '  ProxyJump loop-a',
  'Host chain',
  '  ProxyJump edge-bastion,inner-bastion',
  '',
].join('\n');
const env = memoryEnvironment({ '/cfg': CONFIG });
const resolveSshChainOf = (options: Parameters<typeof resolveSshChain>[0]) => resolveSshChain(options, '/cfg', env);

describe('resolveSshChain', () => {
  it('fills the target from the config and defaults (local user, port 22)', () => {
    expect(resolveSshChainOf({ host: '10.9.9.9' })).toEqual({
      target: {
        name: '10.9.9.9',
        endpoint: { user: 'ops', host: '10.9.9.9', port: 22 },
        keyFiles: [],
        usesDefaultKeys: true,
      },
      jumps: [],
    });
  });

  it('lets what was typed beat the flags, and the flags beat the config', () => {
    const chain = resolveSshChainOf({ host: 'admin@store-1:2201', port: 2202, keyFiles: ['/k'] });
    expect(chain.target).toEqual({
      name: 'admin@store-1:2201',
      endpoint: { user: 'admin', host: 'store-1', port: 2201 },
      keyFiles: ['/k'],
      usesDefaultKeys: false,
    });
    expect(resolveSshChainOf({ host: 'store-1', port: 2202 }).target.endpoint.port).toBe(2202);
  });

  it("expands ProxyJump chains from the config, a bastion's own ProxyJump first", () => {
    const chain = resolveSshChainOf({ host: 'store-1' });
    expect(chain.jumps.map((hop) => hop.endpoint)).toEqual([
      { user: 'jump', host: '203.0.113.10', port: 22 },
      { user: 'ops', host: '10.0.0.2', port: 22 },
    ]);
    expect(chain.target.keyFiles).toEqual(['/home/ops/.ssh/stores']);
  });

  it('uses --ssh-jump instead of the config, in the order given', () => {
    const chain = resolveSshChainOf({ host: 'store-1', jumps: ['a@j1', 'b@j2:2222'] });
    expect(chain.jumps.map((hop) => hop.endpoint)).toEqual([
      { user: 'a', host: 'j1', port: 22 },
      { user: 'b', host: 'j2', port: 2222 },
    ]);
  });

  it("runs a ProxyJump list as ssh does: a later hop's own ProxyJump is replaced by the hops before it", () => {
    // ssh -J edge-bastion inner-bastion: inner-bastion's ProxyJump edge-bastion is not followed a second time.
    const chain = resolveSshChainOf({ host: 'chain' });
    expect(chain.jumps.map((hop) => hop.name)).toEqual(['edge-bastion', 'inner-bastion']);
  });

  it('stops ProxyJump loops with a clear error', () => {
    expect(() => resolveSshChainOf({ host: 'loop-a' })).toThrow(/ProxyJump loop/);
  });

  it('names the bad jump host when one is malformed', () => {
    expect(() => resolveSshChainOf({ host: 'x', jumps: ['root@'] })).toThrow(/jump host/);
  });
});
