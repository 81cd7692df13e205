import { describe, expect, it } from 'vitest';
import {
  isNoProxy,
  parseConnectResponseHead,
  parseProxyUrl,
  proxyDisplay,
  proxyFor,
  renderConnectRequest,
} from '../../../src/tunnel/http-proxy.js';

const HUB = { host: 'hub.example.com', port: 9443 };

describe('parseProxyUrl', () => {
  it('turns user information into a Basic Proxy-Authorization and shows the proxy without it', () => {
    const proxy = parseProxyUrl('http://site%40042:p%3Ass@proxy.local:3128');
    expect(proxy).toEqual({
      host: 'proxy.local',
      port: 3128,
      authorization: `Basic ${Buffer.from('site@042:p:ss').toString('base64')}`,
    });
    expect(proxyDisplay(proxy)).toBe('http://proxy.local:3128');
  });

  it('defaults to port 80 and accepts a bare host:port', () => {
    expect(parseProxyUrl('http://proxy.local')).toEqual({ host: 'proxy.local', port: 80 });
    expect(parseProxyUrl('10.0.0.1:3128')).toEqual({ host: '10.0.0.1', port: 3128 });
    expect(proxyDisplay(parseProxyUrl('http://[fd00::1]:3128'))).toBe('http://[fd00::1]:3128');
  });

  it('refuses other schemes and paths without repeating the credentials', () => {
    for (const bad of [
      'https://u:secret-pw@proxy:443',
      'socks5://u:secret-pw@proxy:1080',
      'http://u:secret-pw@proxy:3128/x',
    ]) {
      let message = '';
      try {
        parseProxyUrl(bad);
      } catch (error) {
        message = (error as Error).message;
        expect(error).toMatchObject({ code: 'E_PROXY_URL' });
      }
      expect(message).not.toBe('');
      expect(message).not.toContain('secret-pw');
    }
  });
});

describe('isNoProxy', () => {
  it('follows curl: *, exact host, domain suffix, host:port, CIDR', () => {
    expect(isNoProxy(HUB, '*')).toBe(true);
    expect(isNoProxy(HUB, 'other.com, hub.example.com')).toBe(true);
    expect(isNoProxy(HUB, '.example.com')).toBe(true);
    expect(isNoProxy(HUB, 'example.com')).toBe(true);
    expect(isNoProxy(HUB, 'ample.com')).toBe(false);
    expect(isNoProxy(HUB, 'hub.example.com:443')).toBe(false);
    expect(isNoProxy(HUB, 'hub.example.com:9443')).toBe(true);
    expect(isNoProxy({ host: '10.1.2.3', port: 9443 }, '10.0.0.0/8')).toBe(true);
    expect(isNoProxy({ host: '192.168.1.1', port: 9443 }, '10.0.0.0/8')).toBe(false);
    expect(isNoProxy(HUB, '')).toBe(false);
  });
});

describe('proxyFor', () => {
  it('prefers the explicit proxy, then HTTPS_PROXY unless NO_PROXY covers the hub', () => {
    const env = { HTTPS_PROXY: 'http://env-proxy:3128', NO_PROXY: 'internal' };
    expect(proxyFor(HUB, { explicit: 'http://flag-proxy:8080', env })?.host).toBe('flag-proxy');
    expect(proxyFor(HUB, { env })?.host).toBe('env-proxy');
    expect(proxyFor(HUB, { env: { https_proxy: 'http://lower:3128' } })?.host).toBe('lower');
    expect(proxyFor(HUB, { env: { ...env, NO_PROXY: 'example.com' } })).toBeUndefined();
    expect(proxyFor(HUB, { env: {} })).toBeUndefined();
  });
});

describe('the CONNECT exchange', () => {
  it('asks for host:port with credentials only when there are some', () => {
    expect(renderConnectRequest({ host: 'p', port: 1 }, HUB)).toBe(
      'CONNECT hub.example.com:9443 HTTP/1.1\r\nHost: hub.example.com:9443\r\n\r\n',
    );
    expect(
      renderConnectRequest({ host: 'p', port: 1, authorization: 'Basic eA==' }, { host: 'fd00::1', port: 9443 }),
    ).toBe('CONNECT [fd00::1]:9443 HTTP/1.1\r\nHost: [fd00::1]:9443\r\nProxy-Authorization: Basic eA==\r\n\r\n');
  });

  it('reads the status of the answer head', () => {
    expect(parseConnectResponseHead('HTTP/1.1 200 Connection established\r\n\r\n')).toEqual({
      status: 200,
      reason: 'Connection established',
    });
    expect(parseConnectResponseHead('HTTP/1.0 407\r\n\r\n')).toEqual({ status: 407, reason: '' });
    expect(parseConnectResponseHead('SSH-2.0-OpenSSH\r\n')).toBeUndefined();
  });
});
