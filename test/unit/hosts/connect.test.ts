import { describe, expect, it } from 'vitest';
import { resolveSshChain } from '../../../src/hosts/connect.js';
import { parseSshConfig } from '../../../src/hosts/ssh-config.js';

const context = { homeDir: '/home/ops', localUser: 'ops' };
const blocks = parseSshConfig(
  [
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
    '',
  ].join('\n'),
  { context },
);

describe('resolveSshChain', () => {
  it('fills the target from the config and defaults (local user, port 22)', () => {
    expect(resolveSshChain({ host: '10.9.9.9' }, blocks, context)).toEqual({
      target: { endpoint: { user: 'ops', host: '10.9.9.9', port: 22 }, keyFiles: [] },
      jumps: [],
    });
  });

  it('lets what was typed beat the flags, and the flags beat the config', () => {
    const chain = resolveSshChain({ host: 'admin@store-1:2201', port: 2202, keyFiles: ['/k'] }, blocks, context);
    expect(chain.target).toEqual({ endpoint: { user: 'admin', host: 'store-1', port: 2201 }, keyFiles: ['/k'] });
    expect(resolveSshChain({ host: 'store-1', port: 2202 }, blocks, context).target.endpoint.port).toBe(2202);
  });

  it("expands ProxyJump chains from the config, a bastion's own ProxyJump first", () => {
    const chain = resolveSshChain({ host: 'store-1' }, blocks, context);
    expect(chain.jumps.map((hop) => hop.endpoint)).toEqual([
      { user: 'jump', host: '203.0.113.10', port: 22 },
      { user: 'ops', host: '10.0.0.2', port: 22 },
    ]);
    expect(chain.target.keyFiles).toEqual(['/home/ops/.ssh/stores']);
  });

  it('uses --ssh-jump instead of the config, in the order given', () => {
    const chain = resolveSshChain({ host: 'store-1', jumps: ['a@j1', 'b@j2:2222'] }, blocks, context);
    expect(chain.jumps.map((hop) => hop.endpoint)).toEqual([
      { user: 'a', host: 'j1', port: 22 },
      { user: 'b', host: 'j2', port: 2222 },
    ]);
  });

  it('stops ProxyJump loops with a clear error', () => {
    expect(() => resolveSshChain({ host: 'loop-a' }, blocks, context)).toThrow(/ProxyJump loop/);
  });

  it('names the bad jump host when one is malformed', () => {
    expect(() => resolveSshChain({ host: 'x', jumps: ['root@'] }, blocks, context)).toThrow(/jump host/);
  });
});
