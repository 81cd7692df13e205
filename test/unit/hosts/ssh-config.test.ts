import { describe, expect, it } from 'vitest';
import {
  argvSplit,
  matchPattern,
  matchPatternList,
  parseJump,
  parsePortArgument,
  resolveSshConfig,
  type SshConfigQuery,
} from '../../../src/hosts/ssh-config.js';
import { memoryEnvironment } from './ssh-config-environment.js';

function resolve(text: string, query: string | SshConfigQuery, files: Record<string, string> = {}) {
  const env = memoryEnvironment({ '/cfg': text, ...files });
  return resolveSshConfig('/cfg', typeof query === 'string' ? { host: query } : query, env);
}

describe('ssh config, resolved as ssh -G resolves it', () => {
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
      isUserSet: true,
      isPortSet: true,
      identityFiles: ['/home/ops/.ssh/stores', '/home/ops/.ssh/id_root'],
      usesDefaultKeys: false,
      proxyJump: ['bastion-eu'],
    });
  });

  it('honours negated patterns, and defaults to the local user and port 22', () => {
    expect(resolve(config, 'store-lab')).toMatchObject({
      hostName: 'store-lab',
      user: 'fallback',
      port: 22,
      proxyJump: [],
    });
    expect(resolve('', 'x')).toMatchObject({ user: 'ops', port: 22, isUserSet: false, identityFiles: [] });
  });

  it('matches Host patterns case-sensitively against the name as typed, then lower-cases the host name', () => {
    const text = 'Host WEB1\n  User upper\nHost web1\n  User lower\n  HostName Web-%h.Example.COM\n';
    expect(resolve(text, 'WEB1')).toMatchObject({ user: 'upper', hostName: 'web1' });
    expect(resolve(text, 'web1')).toMatchObject({ user: 'lower', hostName: 'web-web1.example.com' });
  });

  it('expands %r to the typed user and %h to the final host name in IdentityFile', () => {
    const text = 'Host web1\n  User cfg\n  HostName WEB.example.com\n  IdentityFile ~/.ssh/%r@%h:%p-%n-%u-%L\n';
    expect(resolve(text, { host: 'web1', user: 'typed' }).identityFiles).toEqual([
      '/home/ops/.ssh/typed@web.example.com:22-web1-ops-laptop',
    ]);
    expect(resolve(text, 'web1').identityFiles).toEqual(['/home/ops/.ssh/cfg@web.example.com:22-web1-ops-laptop']);
  });

  it('reads key=value, quotes, case-insensitive keywords, ProxyJump lists and none', () => {
    const text =
      'HOST a\n  hostname="10.0.0.1"\n  ProxyJump=j1,ops@j2:2200\nHost b\n  ProxyJump none\n  IdentityFile "/keys/with space"\n';
    expect(resolve(text, 'a')).toMatchObject({ hostName: '10.0.0.1', proxyJump: ['j1', 'ops@j2:2200'] });
    expect(resolve(text, 'b')).toMatchObject({ proxyJump: [], identityFiles: ['/keys/with space'] });
  });

  it('evaluates Match host, originalhost, user and all', () => {
    const text =
      'Host alias\n  HostName real.example.com\nMatch host real.example.com user ops\n  Port 2201\nMatch originalhost alias\n  User viaalias\nMatch all\n  IdentityFile /k/all\n';
    expect(resolve(text, 'alias')).toMatchObject({ port: 2201, user: 'viaalias', identityFiles: ['/k/all'] });
    expect(resolve(text, 'other')).toMatchObject({ port: 22, user: 'ops' });
  });

  it('reads nothing from an Include inside a block that does not apply', () => {
    const files = { '/home/ops/.ssh/sites.conf': 'Host *\n  User fromsite\n' };
    const text = 'Host site-*\n  Include sites.conf\n  Port 2200\nHost *\n  User default\n';
    expect(resolve(text, 'site-1', files)).toMatchObject({ user: 'fromsite', port: 2200 });
    expect(resolve(text, 'db-1', files)).toMatchObject({ user: 'default', port: 22 });
  });

  it('refuses the whole file for a bad Port anywhere, as ssh does', () => {
    for (const port of ['0x10', '1e3', '22.0', '0', '65536', 'none']) {
      expect(() => resolve(`Host elsewhere\n  Port ${port}\n`, 'x'), port).toThrow(/Bad port/);
    }
    expect(resolve('Host x\n  Port 0022\n', 'x').port).toBe(22);
    expect(resolve('Host x\n  Port ssh\n', 'x').port).toBe(22);
  });

  it('refuses unknown keywords, missing arguments and trailing arguments, as ssh does', () => {
    expect(() => resolve('Host y\n  Bogus yes\n', 'x')).toThrow(/Bad configuration option: bogus/);
    expect(resolve('IgnoreUnknown Bog*\nHost y\n  Bogus yes\n', 'x').user).toBe('ops');
    expect(() => resolve('Host y\n  User\n', 'x')).toThrow(/no argument/);
    expect(() => resolve('Host x\n  User a b\n', 'x')).toThrow(/garbage/);
    expect(() => resolve('Host y\n  ProxyJump a@\n', 'x')).toThrow(/Invalid ProxyJump/);
  });

  it('refuses a jump host that is the host itself, as ssh does (same name, port and user)', () => {
    expect(() => resolve('Host x\n  ProxyJump jumpb,x\n', 'x')).toThrow(/jumphost loop via x/);
    expect(resolve('Host x\n  ProxyJump admin@x\n', 'x').proxyJump).toEqual(['admin@x']);
  });

  it('lets ProxyCommand follow ProxyJump none, but not another ProxyJump', () => {
    expect(() => resolve('Host x\n  ProxyJump none\n  ProxyCommand nc %h %p\n', 'x')).toThrow(/ProxyCommand/);
    expect(resolve('Host x\n  ProxyJump jumpa\n  ProxyCommand nc %h %p\n', 'x').proxyJump).toEqual(['jumpa']);
  });

  it('refuses what edgeadm does not run when it applies: ProxyCommand, Match exec', () => {
    expect(() => resolve('Host x\n  ProxyCommand nc %h %p\n', 'x')).toThrow(/ProxyCommand .* not supported/);
    expect(resolve('Host y\n  ProxyCommand nc %h %p\n', 'x').user).toBe('ops');
    expect(() => resolve('Match host x exec "true"\n  User wrong\n', 'x')).toThrow(/Match exec/);
    expect(resolve('Match host y exec "true"\n  User wrong\n', 'x').user).toBe('ops');
  });
});

describe('ssh config pieces', () => {
  it('matches patterns like OpenSSH', () => {
    expect(matchPattern('anything', '*')).toBe(true);
    expect(matchPattern('web1', 'web?')).toBe(true);
    expect(matchPattern('web10', 'web?')).toBe(false);
    expect(matchPattern('WEB1', 'web1')).toBe(false);
    expect(matchPatternList('web1', '!web1,web*', false)).toBe(-1);
    expect(matchPatternList('web1', 'WEB*', true)).toBe(1);
  });
  it('splits arguments as argv_split does', () => {
    expect(argvSplit(`"a b" 'c d' e\\ f g#h # comment`, 'x')).toEqual(['a b', 'c d', 'e f', 'g#h']);
    expect(() => argvSplit('"open', 'x')).toThrow(/invalid quotes/);
  });
  it('reads ports and jump lists as a2port and parse_jump do', () => {
    expect(parsePortArgument('+22', {})).toBe(22);
    expect(parsePortArgument('22 ', {})).toBeUndefined();
    expect(parseJump('a,ops@b:2200,ssh://c@d:22')).toEqual(['a', 'ops@b:2200', 'ssh://c@d:22']);
    expect(parseJump('a,b:0x10')).toBeUndefined();
  });
});
