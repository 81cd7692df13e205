import { describe, expect, it } from 'vitest';
import { blockMatches, parseSshConfig, resolveSshConfig } from '../../../src/hosts/ssh-config.js';

const context = { homeDir: '/home/ops', localUser: 'ops' };

function resolve(text: string, alias: string, files: Record<string, string> = {}) {
  const blocks = parseSshConfig(text, { context, readFile: (path) => files[path] });
  return resolveSshConfig(blocks, alias, context);
}

describe('ssh config', () => {
  const config = `
# Sites
Host bastion-eu
  HostName 203.0.113.10
  User jump
  Port 2222
  IdentityFile ~/.ssh/bastion_ed25519

Host store-* !store-lab
  ProxyJump bastion-eu
  User root
  IdentityFile ~/.ssh/stores

Host store-042
  HostName 10.42.0.5
  User admin
  Port 22

Host *
  User fallback
  IdentityFile %d/.ssh/id_%r
`;

  it('applies the first value per keyword in file order, and accumulates IdentityFile', () => {
    expect(resolve(config, 'store-042')).toEqual({
      hostName: '10.42.0.5',
      user: 'root',
      port: 22,
      identityFiles: ['/home/ops/.ssh/stores', '/home/ops/.ssh/id_root'],
      proxyJump: ['bastion-eu'],
    });
  });

  it('resolves a bastion alias on its own', () => {
    expect(resolve(config, 'bastion-eu')).toMatchObject({
      hostName: '203.0.113.10',
      user: 'jump',
      port: 2222,
      identityFiles: ['/home/ops/.ssh/bastion_ed25519', '/home/ops/.ssh/id_jump'],
    });
  });

  it('honours negated patterns', () => {
    expect(resolve(config, 'store-lab')).toEqual({
      hostName: undefined,
      user: 'fallback',
      port: undefined,
      identityFiles: ['/home/ops/.ssh/id_fallback'],
      proxyJump: undefined,
    });
  });

  it('reads key=value, quoted values, case-insensitive keywords and ProxyJump lists and none', () => {
    const text =
      'HOST a\n  hostname="10.0.0.1"\n  ProxyJump=j1,ops@j2:2200\nHost b\n  ProxyJump none\n  IdentityFile "/keys/with space"\n';
    expect(resolve(text, 'a')).toMatchObject({ hostName: '10.0.0.1', proxyJump: ['j1', 'ops@j2:2200'] });
    expect(resolve(text, 'b')).toMatchObject({ proxyJump: [], identityFiles: ['/keys/with space'] });
  });

  it('expands %h in HostName to the alias', () => {
    expect(resolve('Host *.lab\n  HostName %h.example.com\n', 'rack1.lab').hostName).toBe('rack1.lab.example.com');
  });

  it('skips Match blocks instead of applying their options', () => {
    const text = 'Match host x exec "true"\n  User wrong\nHost x\n  User right\n';
    expect(resolve(text, 'x').user).toBe('right');
  });

  it('follows Include (relative to ~/.ssh), continuing the including block afterwards', () => {
    const files = { '/home/ops/.ssh/sites.conf': 'Host site-1\n  HostName 10.1.0.1\n  User site\n' };
    const text = 'Host site-*\n  Include sites.conf\n  Port 2200\nHost *\n  User default\n';
    expect(resolve(text, 'site-1', files)).toMatchObject({ hostName: '10.1.0.1', user: 'site', port: 2200 });
  });

  it('refuses an invalid Port', () => {
    expect(() => resolve('Host x\n  Port none\n', 'x')).toThrow(/invalid Port/);
  });

  it('matches patterns like OpenSSH', () => {
    expect(blockMatches(['*'], 'anything')).toBe(true);
    expect(blockMatches(['web?'], 'web1')).toBe(true);
    expect(blockMatches(['web?'], 'web10')).toBe(false);
    expect(blockMatches(['!web1', 'web*'], 'web1')).toBe(false);
    expect(blockMatches(['!web1'], 'db1')).toBe(false);
  });
});
