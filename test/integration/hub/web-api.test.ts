/**
 * The web view's API on a real hub in this process (`startHub` with an
 * injected clock, so that expiry is decided by setting the time, not by
 * waiting): sessions that expire, users replaced after sign-in, sign-in
 * refused for bad tokens and other sites, the limit on live-update streams,
 * and the headers of the page itself.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { request, type RequestOptions } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type RunningHub } from '../../../src/hub/server/hub-server.js';
import { MAX_EVENT_STREAMS_PER_SESSION, WEB_SESSION_LIFETIME_MS } from '../../../src/hub/web/limits.js';
import { silentLogger } from '../../../src/log/run-log.js';
import { ensureWebBuilt, signInDirect, tokenOf, webRequest } from '../../support/web-view.js';

describe('hub web view API', { timeout: 60_000 }, () => {
  const dataDir = join(mkdtempSync(join(tmpdir(), 'hub-web-api-')), 'hub');
  let hub: RunningHub;
  let now = Date.parse('2026-06-01T10:00:00Z');
  const address = (): { port: number; dataDir: string } => ({ port: hub.port, dataDir });

  beforeAll(async () => {
    ensureWebBuilt();
    hub = await startHub({ listen: '127.0.0.1:0', dataDir, logger: silentLogger, clock: () => new Date(now) });
  });
  afterAll(async () => {
    await hub?.close();
  });

  it('refuses a session once it has expired, and not before', async () => {
    const session = await signInDirect(address(), tokenOf(hub.adminConfigPath));
    const fleet = () => webRequest({ ...address(), path: '/ui/api/fleet', headers: { cookie: session.cookie } });
    now += WEB_SESSION_LIFETIME_MS - 1;
    expect((await fleet()).status).toBe(200);
    now += 1;
    const expired = await fleet();
    expect(expired.status).toBe(401);
    expect(expired.json.code).toBe('E_WEB_UNAUTHORIZED');
    // Signing in again works: only that session ended.
    const again = await signInDirect(address(), tokenOf(hub.adminConfigPath));
    expect((await webRequest({ ...address(), path: '/ui/api/fleet', headers: { cookie: again.cookie } })).status).toBe(
      200,
    );
  });

  it('ends the sessions of a user whose token was replaced since sign-in', async () => {
    const admin = tokenOf(hub.adminConfigPath);
    const create = (): Promise<string> =>
      new Promise((resolve, reject) => {
        const req = request(
          `${hub.url}/hub/v1/users`,
          {
            method: 'POST',
            ca: readFileSync(join(dataDir, 'pki', 'ca.crt'), 'utf8'),
            headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
          },
          (res) => {
            let body = '';
            res.on('data', (chunk: Buffer) => (body += chunk.toString()));
            res.on('end', () => resolve((JSON.parse(body) as { token: string }).token));
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify({ name: 'bob', clustersSelector: 'env=dev' }));
      });
    const first = await create();
    const session = await signInDirect(address(), first);
    const get = () => webRequest({ ...address(), path: '/ui/api/clusters', headers: { cookie: session.cookie } });
    expect((await get()).status).toBe(200);
    await create();
    expect((await get()).status).toBe(401);
  });

  it('refuses sign-in with a bad token, and from another site', async () => {
    const post = (headers: Record<string, string>) =>
      webRequest({ ...address(), path: '/ui/api/session', method: 'POST', headers });
    const origin = `https://127.0.0.1:${hub.port}`;
    expect((await post({ authorization: 'Bearer edgeadm-hub-nope', origin })).status).toBe(401);
    expect((await post({ origin })).status).toBe(401);
    const token = tokenOf(hub.adminConfigPath);
    const crossSite = await post({ authorization: `Bearer ${token}`, origin: 'https://evil.example' });
    expect(crossSite.status).toBe(403);
    expect(crossSite.setCookie).toEqual([]);
    expect((await post({ authorization: `Bearer ${token}` })).status).toBe(403);
  });

  it(`holds at most ${MAX_EVENT_STREAMS_PER_SESSION} live-update streams per session`, async () => {
    const session = await signInDirect(address(), tokenOf(hub.adminConfigPath));
    const ca = readFileSync(join(dataDir, 'pki', 'ca.crt'), 'utf8');
    const open = (): Promise<IncomingMessage> =>
      new Promise((resolve, reject) => {
        const options: RequestOptions = {
          host: '127.0.0.1',
          port: hub.port,
          path: '/ui/api/events',
          ca,
          agent: false,
          headers: { cookie: session.cookie },
        };
        request(options, resolve).on('error', reject).end();
      });
    const streams: IncomingMessage[] = [];
    for (let i = 0; i < MAX_EVENT_STREAMS_PER_SESSION; i += 1) {
      const stream = await open();
      expect(stream.statusCode).toBe(200);
      expect(stream.headers['content-type']).toContain('text/event-stream');
      streams.push(stream);
    }
    const refused = await open();
    expect(refused.statusCode).toBe(429);
    refused.resume();
    // A closed stream frees its place.
    const closed = new Promise((resolve) => streams[0]?.socket.once('close', resolve));
    streams[0]?.destroy();
    await closed;
    let reopened = await open();
    while (reopened.statusCode === 429) {
      // The hub learns of the close a moment after the socket is gone here; ask again on its answer.
      reopened.resume();
      reopened = await open();
    }
    expect(reopened.statusCode).toBe(200);
    for (const stream of [...streams, reopened]) stream.destroy();
  });

  it('serves the page with a strict policy, its files for good, and nothing else', async () => {
    const redirect = await webRequest({ ...address(), path: '/ui' });
    expect(redirect.status).toBe(308);
    const ca = readFileSync(join(dataDir, 'pki', 'ca.crt'), 'utf8');
    const head = (path: string): Promise<IncomingMessage> =>
      new Promise((resolve, reject) => {
        request({ host: '127.0.0.1', port: hub.port, path, ca, agent: false }, (res) => {
          res.resume();
          resolve(res);
        })
          .on('error', reject)
          .end();
      });
    const index = await head('/ui/');
    expect(index.statusCode).toBe(200);
    expect(index.headers['content-security-policy']).toContain("script-src 'self'");
    expect(index.headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(index.headers['cache-control']).toBe('no-cache');
    const html = await webRequest({ ...address(), path: '/ui/' });
    const script = /src="(assets\/main-[A-Z0-9]+\.js)"/.exec(String(html.json.text))?.[1];
    expect(script).toBeDefined();
    const asset = await head(`/ui/${script}`);
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['cache-control']).toContain('immutable');
    expect((await webRequest({ ...address(), path: '/ui/assets/../../hub/v1/users' })).status).toBe(404);
    expect((await webRequest({ ...address(), path: '/ui/nothing.js' })).status).toBe(404);
  });
});
