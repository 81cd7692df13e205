import { describe, expect, it } from 'vitest';
import { formatEndpoint, parseSshTarget } from '../../../src/hosts/ssh-target.js';

describe('parseSshTarget', () => {
  it('reads user, host and port', () => {
    expect(parseSshTarget('root@10.0.0.5:2222')).toEqual({ user: 'root', host: '10.0.0.5', port: 2222 });
    expect(parseSshTarget('ops@bastion.example.com')).toEqual({
      user: 'ops',
      host: 'bastion.example.com',
      port: undefined,
    });
    expect(parseSshTarget('store-042')).toEqual({ user: undefined, host: 'store-042', port: undefined });
  });

  it('reads IPv6 addresses in brackets', () => {
    expect(parseSshTarget('root@[2001:db8::1]:22')).toEqual({ user: 'root', host: '2001:db8::1', port: 22 });
    expect(parseSshTarget('[fe80::1%eth0]')).toEqual({ user: undefined, host: 'fe80::1%eth0', port: undefined });
  });

  it('refuses malformed targets with a validation error that names the problem', () => {
    const cases: Array<[string, RegExp]> = [
      ['', /empty/],
      ['root@', /not a valid host/],
      ['root@host:0', /out of range/],
      ['root@host:70000', /out of range/],
      ['root@host:ssh', /not a port number/],
      ['root@2001:db8::1', /brackets/],
      ['root@[2001:db8::1', /missing "]"/],
      ['bad user@host', /not a valid user name/],
      ['root@host name', /not a valid host/],
      ['root@-oProxyCommand=evil', /not a valid host/],
    ];
    for (const [text, why] of cases) {
      expect(() => parseSshTarget(text), text).toThrow(why);
      try {
        parseSshTarget(text);
      } catch (error) {
        expect((error as { code: string; exitCode: number }).code).toBe('E_SSH_TARGET');
        expect((error as { exitCode: number }).exitCode).toBe(3);
      }
    }
  });

  it('formats endpoints back, bracketing IPv6', () => {
    expect(formatEndpoint({ user: 'root', host: '10.0.0.5', port: 22 })).toBe('root@10.0.0.5:22');
    expect(formatEndpoint({ user: 'root', host: '2001:db8::1', port: 22 })).toBe('root@[2001:db8::1]:22');
  });
});
