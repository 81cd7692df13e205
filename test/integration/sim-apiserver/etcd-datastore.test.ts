/**
 * The simulated API server on a REAL etcd (etcd-datastore.ts; Debian's
 * /usr/bin/etcd, one member on loopback): instances in one process, each on
 * its own ports, as the simulated k3s servers of an HA control plane run
 * them on their hosts. What is checked: one instance leads and the others
 * reach it; a leader that stops hands over to another with every object and
 * one resourceVersion sequence; requests through a follower are held across
 * that change, not failed; a restarted instance follows and serves the same
 * objects with its own version; a client certificate through a follower
 * acts as itself; a follower whose etcd member is gone says it is not ready.
 */
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type HttpResponse } from '../../support/https-client.js';
import { Etcd3 } from 'etcd3';
import { readDatastore, startEtcdBacked, type EtcdBackedInstance } from '../../support/sim-apiserver/etcd-datastore.js';
import type { SimApiServer } from '../../support/sim-apiserver/sim-apiserver.js';
import { SimCertificateAuthority } from '../../support/sim-apiserver/pki.js';
import { startSimApiServer } from '../../support/sim-apiserver/sim-apiserver.js';
import { startEmbeddedEtcd, type EmbeddedEtcd } from '../../support/sim-k3s/embedded-etcd.js';

const HOST = '127.0.0.1';
const ADMIN_TOKEN = 'a'.repeat(48);
const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';
/** Bound of each wait for an event (a safety net, not a timing assertion). */
const WAIT_MS = 30_000;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function until(what: string, isDone: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await isDone())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen in ${WAIT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface Instance {
  name: string;
  port: number;
  handle: EtcdBackedInstance;
  fatal: string[];
  /** Its API server, while it leads. */
  apiServer?: SimApiServer | undefined;
}

describe('the simulated API server on a real etcd', () => {
  let etcd: EmbeddedEtcd;
  let ca: { certPem: string; keyPem: string };
  let authority: SimCertificateAuthority;
  const running: Instance[] = [];

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-etcd-'));
    etcd = await startEmbeddedEtcd({
      serverDir: dir,
      nodeName: 'test',
      address: HOST,
      ports: { client: await freePort(), peer: await freePort() },
      log: () => {},
    });
    authority = await SimCertificateAuthority.generate();
    ca = { certPem: authority.certPem, keyPem: authority.keyPem };
  }, WAIT_MS);

  afterAll(async () => {
    for (const instance of running) await instance.handle.stop().catch(() => undefined);
    await etcd?.stop();
  });

  async function start(name: string, port?: number): Promise<Instance> {
    const publicPort = port ?? (await freePort());
    const internalPort = await freePort();
    const fatal: string[] = [];
    const gitVersion = `v1.31.0+${name}`;
    const started: { apiServer?: SimApiServer } = {};
    const handle = await startEtcdBacked({
      host: HOST,
      port: publicPort,
      internalPort,
      etcdEndpoint: etcd.clientUrl,
      ca,
      sans: [],
      gitVersion,
      log: () => {},
      onFatal: (reason) => fatal.push(reason),
      startApiServer: async (snapshot) => {
        started.apiServer = await startSimApiServer({
          host: HOST,
          port: internalPort,
          adminToken: ADMIN_TOKEN,
          ca,
          gitVersion,
          ...(snapshot ? { snapshot } : {}),
        });
        return started.apiServer;
      },
    });
    await handle.ready;
    const instance = {
      name,
      port: publicPort,
      handle,
      fatal,
      get apiServer() {
        return started.apiServer;
      },
    };
    running.push(instance);
    return instance;
  }

  async function stop(instance: Instance): Promise<void> {
    await instance.handle.stop();
    running.splice(running.indexOf(instance), 1);
  }

  const through = (instance: Instance, req: Parameters<typeof call>[1]): Promise<HttpResponse> =>
    call({ url: `https://${HOST}:${instance.port}`, caPem: ca.certPem }, { token: ADMIN_TOKEN, ...req });

  const configMap = (name: string): Record<string, unknown> => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name },
    data: { name },
  });

  it('one instance leads, another reaches it: writes through either are read through both, /version is each its own', async () => {
    const a = await start('a');
    await until('a leads', () => a.handle.isLeading());
    const b = await start('b');
    expect(b.handle.isLeading()).toBe(false);
    expect((await through(b, { method: 'POST', path: CONFIGMAPS, body: configMap('via-b') })).status).toBe(201);
    expect((await through(a, { method: 'POST', path: CONFIGMAPS, body: configMap('via-a') })).status).toBe(201);
    for (const instance of [a, b]) {
      const names = (await through(instance, { path: CONFIGMAPS })).json.items.map(
        (item: { metadata: { name: string } }) => item.metadata.name,
      );
      expect(names).toEqual(['via-a', 'via-b']);
    }
    expect((await through(a, { path: '/version' })).json.gitVersion).toBe('v1.31.0+a');
    expect((await through(b, { path: '/version' })).json.gitVersion).toBe('v1.31.0+b');
  });

  it('a client certificate reaches the leader through a follower as its own identity; one the CA did not sign is refused', async () => {
    const follower = running.find((instance) => !instance.handle.isLeading())!;
    const byCertificate = (cert: { certPem: string; keyPem: string }): Promise<HttpResponse> =>
      call({ url: `https://${HOST}:${follower.port}`, caPem: ca.certPem }, { path: CONFIGMAPS, cert });
    const admin = await authority.issueClient({ user: 'cert-admin', groups: ['system:masters'] });
    expect((await byCertificate(admin)).status).toBe(200);
    const nobody = await authority.issueClient({ user: 'nobody', groups: [] });
    expect((await byCertificate(nobody)).status).toBe(403);
    const stranger = await (
      await SimCertificateAuthority.generate()
    ).issueClient({
      user: 'cert-admin',
      groups: ['system:masters'],
    });
    expect((await byCertificate(stranger)).status).toBe(401);
  });

  it('changes of one object made at once reach etcd as the last of them (etcd refuses a key twice in a transaction)', async () => {
    const leader = running.find((instance) => instance.handle.isLeading())!;
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'burst' };
    for (const value of ['1', '2', '3']) {
      leader.apiServer!.setObject({ ...ref, metadata: { name: 'burst', namespace: 'default' }, data: { value } });
    }
    const client = new Etcd3({ hosts: etcd.clientUrl });
    try {
      const stored = leader.apiServer!.getObject(ref)!;
      await until('the last change is in etcd', async () => {
        const objects = (await readDatastore(client))?.objects ?? [];
        return objects.some((o) => o.metadata.resourceVersion === stored.metadata.resourceVersion);
      });
      const inEtcd = (await readDatastore(client))!.objects.find((o) => o.metadata.name === 'burst')!;
      expect(inEtcd['data']).toEqual({ value: '3' });
    } finally {
      client.close();
    }
    expect(leader.fatal).toEqual([]);
  });

  it('the leader stops: requests through the follower are held, not failed, and it leads with every object and one resourceVersion sequence; the stopped one restarts as a follower', async () => {
    const [a, b] = running as [Instance, Instance];
    const before = (await through(b, { path: `${CONFIGMAPS}/via-a` })).json;
    let failed = 0;
    let polls = 0;
    let isPolling = true;
    const polling = (async () => {
      while (isPolling) {
        polls += 1;
        const status = (await through(b, { path: `${CONFIGMAPS}/via-a` }).catch(() => ({ status: 0 }))).status;
        if (status !== 200) failed += 1;
      }
    })();
    await stop(a);
    await until('b leads', () => b.handle.isLeading());
    await until('five more polls', () => polls > 5);
    isPolling = false;
    await polling;
    expect(failed).toBe(0);
    const after = (await through(b, { path: `${CONFIGMAPS}/via-a` })).json;
    expect(after).toEqual(before);
    const written = (await through(b, { method: 'POST', path: CONFIGMAPS, body: configMap('after') })).json;
    expect(Number(written.metadata.resourceVersion)).toBeGreaterThan(Number(before.metadata.resourceVersion));

    const again = await start('a', a.port);
    expect(again.handle.isLeading()).toBe(false);
    const read = (await through(again, { path: `${CONFIGMAPS}/after` })).json;
    expect(read.metadata.resourceVersion).toBe(written.metadata.resourceVersion);
    expect((await through(again, { path: '/version' })).json.gitVersion).toBe('v1.31.0+a');
    expect([...a.fatal, ...b.fatal, ...again.fatal]).toEqual([]);
  });

  it('a follower whose etcd member cannot answer is not ready', async () => {
    const follower = running.find((instance) => !instance.handle.isLeading())!;
    expect((await through(follower, { path: '/readyz' })).status).toBe(200);
    await etcd.stop();
    expect((await through(follower, { path: '/readyz' })).status).toBe(500);
  });
});
