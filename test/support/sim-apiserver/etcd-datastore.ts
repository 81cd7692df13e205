/**
 * The simulated API server on a REAL etcd (one member per control plane, see
 * ../sim-k3s/embedded-etcd.ts): what lets one control plane of a simulated
 * HA cluster, the first included, stop and restart while the others keep
 * answering. A SIMULATION, not kube-apiserver's storage layer.
 *
 * Every instance campaigns in one etcd election. The instance that leads
 * runs the simulated API server proper (its one synchronous in-memory
 * store, its controllers) on `<host>:<internalPort>` (k3s's kube-apiserver
 * listens on 6444 behind its supervisor's 6443), built from what etcd holds,
 * and appends every change of its store to etcd in transactions fenced on
 * its election key: a leader that lost the lead cannot write, and exits.
 * Every instance's public port (`<host>:<port>`) hands each connection to
 * the local API server while it leads (TCP, so TLS and client certificates
 * reach it unchanged), and otherwise to a front that answers `/version` with
 * its own binary's version, `/readyz` only while its etcd member answers a
 * quorum read, and forwards everything else to the leader, holding a request
 * across a change of leader for a bounded time. A client certificate
 * verified against the CA is forwarded as impersonation of its user and
 * groups (the front authenticates to the leader with a `system:masters`
 * certificate of its own), upgraded connections included, so a node's
 * kubelet certificate works through any instance.
 *
 * Why this shape rather than an API server per instance over etcd (what
 * kube-apiserver is: each instance stateless, reads from its own watch
 * cache): the simulated API server's store is synchronous and its
 * controllers (node lifecycle, workloads, tokens) write it directly;
 * replicating it would need every write path split in two. One leading
 * store keeps every read, write and watch linearizable in one place, runs
 * the controllers once (kube-controller-manager leads by election too), and
 * still has the property that matters to a user of an HA control plane: the
 * datastore is etcd's, on a quorum of members, and any one control plane
 * may go away. What differs is written in README.md ("HA on etcd").
 */
import { connect, createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import type { Duplex } from 'node:stream';
import { Etcd3, type Campaign, type ElectionObserver } from 'etcd3';
import { SimCertificateAuthority } from './pki.js';
import type { SimApiServer } from './sim-apiserver.js';
import type { KubeObject, StoreEvent, StoreSnapshot } from './store.js';

/** Where the objects live in etcd: one key per object, its JSON the value. */
export const ETCD_REGISTRY_PREFIX = '/sim-apiserver/registry/';
/** The store's latest resourceVersion, written in the same transaction as the change that made it. */
export const ETCD_RESOURCE_VERSION_KEY = '/sim-apiserver/resource-version';
/** The election every instance campaigns in. */
const ELECTION = 'sim-apiserver-leader';
/** The leader's lease: how long others wait for a leader that died without resigning (long enough for a loaded test machine). */
const LEADER_LEASE_TTL_S = 15;
/** How long a forwarded request waits for a leader (a change of leader included) before 503. */
const FORWARD_RETRY_MS = 15_000;
/** Pause between forwarding attempts while no leader answers. */
const FORWARD_RETRY_INTERVAL_MS = 50;
/** How long /readyz waits for the local member's quorum read. */
const QUORUM_READ_TIMEOUT_MS = 1_000;
/** How long start-up waits for the local etcd member to answer with quorum. */
const ETCD_READY_TIMEOUT_MS = 60_000;
/** Changes in one transaction (etcd's default --max-txn-ops is 128; one more op carries the version). */
const CHANGES_PER_TRANSACTION = 100;
/** How long each step of stopping (the last writes, resigning) may wait for etcd. */
const STOP_STEP_TIMEOUT_MS = 2_000;
/** A bound on a request body the front holds to forward it again after a change of leader. */
const MAX_FORWARDED_BODY_BYTES = 3 * 1024 * 1024;

/** What an instance needs to run on etcd. */
export interface EtcdBackedOptions {
  /** The public address and port (the one clients use). */
  host: string;
  port: number;
  /** The port the API server listens on, on `host`, while this instance leads. */
  internalPort: number;
  /** This instance's etcd member (its client URL). */
  etcdEndpoint: string;
  ca: { certPem: string; keyPem: string };
  sans: string[];
  /** This binary's version, answered at /version by the front. */
  gitVersion: string;
  /** Starts the API server on `internalPort` from `snapshot` (undefined: etcd is empty, a new cluster). */
  startApiServer(snapshot: StoreSnapshot | undefined): Promise<SimApiServer>;
  log(line: string): void;
  /**
   * Called when this instance can no longer serve as it must (it lost the
   * lead, or its etcd refused a write): default, exit 1 (a restart
   * campaigns again). Tests in one process record it instead.
   */
  onFatal?(reason: string): void;
}

/** A running instance. */
export interface EtcdBackedInstance {
  /** Resolves once the public port serves and a leader is known. */
  ready: Promise<void>;
  /** Whether this instance leads. */
  isLeading(): boolean;
  /** Stops: a leader stops its API server, writes what is left and resigns at once. */
  stop(): Promise<void>;
}

/** An object's key: its apiVersion and kind (as the store stamps them), namespace and name. */
function registryKey(object: KubeObject): string {
  const { namespace = '', name } = object.metadata;
  return `${ETCD_REGISTRY_PREFIX}${object.apiVersion}/${object.kind}/${namespace}/${name}`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/** Reads the whole datastore: the objects and the version of the last change (undefined when empty). */
export async function readDatastore(client: Etcd3): Promise<StoreSnapshot | undefined> {
  const version = await client.get(ETCD_RESOURCE_VERSION_KEY).string();
  if (version === null) return undefined;
  const values = await client.getAll().prefix(ETCD_REGISTRY_PREFIX).strings();
  return {
    resourceVersion: Number(version),
    objects: Object.values(values).map((text) => JSON.parse(text) as KubeObject),
  };
}

/** Starts an instance; see the module comment. */
export async function startEtcdBacked(options: EtcdBackedOptions): Promise<EtcdBackedInstance> {
  const client = new Etcd3({ hosts: options.etcdEndpoint, dialTimeout: QUORUM_READ_TIMEOUT_MS });
  const deadline = Date.now() + ETCD_READY_TIMEOUT_MS;
  for (;;) {
    try {
      await withTimeout(client.get(ETCD_RESOURCE_VERSION_KEY).string(), QUORUM_READ_TIMEOUT_MS);
      break;
    } catch (error) {
      if (Date.now() > deadline) {
        throw new Error(`etcd at ${options.etcdEndpoint}: ${(error as Error).message}`, { cause: error });
      }
      await sleep(200);
    }
  }
  const ca = await SimCertificateAuthority.load(options.ca.certPem, options.ca.keyPem);
  const serving = await ca.issueServing([options.host, 'localhost', '127.0.0.1', ...options.sans]);
  const ownUrl = `https://${options.host}:${options.internalPort}`;
  const forwarder = await ca.issueClient({ user: 'sim-apiserver:front', groups: ['system:masters'] });

  /**
   * The headers and client credential a request is forwarded with: the
   * caller's own headers (impersonation headers it sent are dropped), plus,
   * for a verified client certificate, impersonation of its subject.
   * Undefined: a certificate the CA did not sign (401).
   */
  function forwardedAs(
    req: IncomingMessage,
    host: string,
  ): { headers: IncomingHttpHeaders; credential?: { cert: string; key: string } } | undefined {
    const socket = req.socket as TLSSocket;
    const peer = socket.getPeerCertificate();
    const hasCertificate = peer !== null && Object.keys(peer).length > 0;
    if (hasCertificate && !socket.authorized) return undefined;
    const headers: IncomingHttpHeaders = { ...req.headers, host };
    for (const name of Object.keys(headers)) if (name.startsWith('impersonate-')) delete headers[name];
    if (!hasCertificate) return { headers };
    const subject = peer.subject as unknown as Record<string, string | string[] | undefined>;
    const names = (value: string | string[] | undefined): string[] =>
      value === undefined ? [] : Array.isArray(value) ? value : [value];
    headers['impersonate-user'] = names(subject.CN)[0] ?? '';
    headers['impersonate-group'] = names(subject.O);
    return { headers, credential: { cert: forwarder.certPem, key: forwarder.keyPem } };
  }

  let leader: string | undefined;
  let apiServer: SimApiServer | undefined;
  let isStopping = false;
  /** Changes not yet in etcd, oldest first (`object` undefined: deleted). */
  const queue: Array<{ key: string; object?: KubeObject; resourceVersion: number }> = [];
  let writing: Promise<void> = Promise.resolve();
  let campaignKey: string | undefined;
  let persistedVersion = 0;

  const front = createHttpsServer(
    {
      cert: serving.certPem,
      key: serving.keyPem,
      ca: options.ca.certPem,
      requestCert: true,
      rejectUnauthorized: false,
    },
    (req, res) => {
      void serveFront(req, res);
    },
  );
  front.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    void forwardUpgrade(req, socket, head);
  });
  /**
   * Every connection accepted, closed at stop: a client's keep-alive
   * connection would otherwise go on reaching this stopped instance's front
   * (answering its old version at /version) after a new instance took the
   * port, as a restarted kube-apiserver's clients reconnect.
   */
  const accepted = new Set<Socket>();
  const listener: TcpServer = createTcpServer((socket: Socket) => {
    accepted.add(socket);
    socket.once('close', () => accepted.delete(socket));
    if (apiServer !== undefined) {
      const local = connect(options.internalPort, options.host);
      socket.pipe(local).pipe(socket);
      local.on('error', () => socket.destroy());
      socket.on('error', () => local.destroy());
      return;
    }
    front.emit('connection', socket);
  });
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(options.port, options.host, () => resolve());
  });

  /** Whether the local member answers a linearizable read (it has a leader and quorum). */
  async function hasQuorum(): Promise<boolean> {
    try {
      await withTimeout(client.get(ETCD_RESOURCE_VERSION_KEY).string(), QUORUM_READ_TIMEOUT_MS);
      return true;
    } catch {
      return false;
    }
  }

  async function serveFront(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && (path === '/version' || path === '/version/')) {
      // This instance's own version, as each kube-apiserver answers with its binary's.
      const [, major = '1', minor = '0'] = /^v(\d+)\.(\d+)/.exec(options.gitVersion) ?? [];
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ major, minor, gitVersion: options.gitVersion, platform: 'linux/amd64' }));
      return;
    }
    if (/^\/(readyz|livez|healthz)(\/|$)/.test(path ?? '') && !(await hasQuorum())) {
      res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end('[-]etcd failed: the local member has no quorum\n');
      return;
    }
    if (forwardedAs(req, '') === undefined) {
      res.writeHead(401, { 'Content-Type': 'application/json' });
      res.end('{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}');
      return;
    }
    const chunks: Buffer[] = [];
    let length = 0;
    for await (const chunk of req) {
      length += (chunk as Buffer).length;
      if (length > MAX_FORWARDED_BODY_BYTES) {
        res.writeHead(413).end();
        return;
      }
      chunks.push(chunk as Buffer);
    }
    const body = Buffer.concat(chunks);
    const until = Date.now() + FORWARD_RETRY_MS;
    for (;;) {
      const target = leader;
      if (target !== undefined && (await forwardOnce(target, req, body, res))) return;
      if (Date.now() > until || res.destroyed) {
        if (!res.headersSent) res.writeHead(503, { 'Content-Type': 'text/plain' });
        res.end('no leading API server answered\n');
        return;
      }
      await sleep(FORWARD_RETRY_INTERVAL_MS);
    }
  }

  /** Forwards one attempt; false when the leader did not answer (nothing was sent back yet). */
  function forwardOnce(target: string, req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<boolean> {
    const url = new URL(target);
    const as = forwardedAs(req, url.host)!;
    return new Promise((resolve) => {
      const out = httpsRequest(
        {
          host: url.hostname,
          port: url.port,
          path: req.url,
          method: req.method,
          headers: as.headers,
          ca: options.ca.certPem,
          agent: false,
          ...as.credential,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          answer.on('error', () => res.destroy());
          res.on('close', () => answer.destroy());
          resolve(true);
        },
      );
      out.on('error', () => resolve(false));
      out.end(body);
    });
  }

  /** This instance cannot go on (see {@link EtcdBackedOptions.onFatal}). */
  function fatal(reason: string): void {
    if (isStopping) return;
    isStopping = true;
    options.log(`${reason}: stopping (a restart campaigns again)`);
    if (options.onFatal) options.onFatal(reason);
    else process.exit(1);
  }

  /**
   * An upgraded connection (exec, port-forward, a node's tunnel): its
   * request head written to the leader as received (with the identity of
   * {@link forwardedAs}), then both ways piped. Held across a change of
   * leader like any request, until one accepts the connection.
   */
  async function forwardUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    const until = Date.now() + FORWARD_RETRY_MS;
    for (;;) {
      const target = leader;
      if (target !== undefined) {
        const url = new URL(target);
        const as = forwardedAs(req, url.host);
        if (as === undefined) {
          socket.end('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
          return;
        }
        const upstream = await new Promise<TLSSocket | undefined>((resolve) => {
          const out = tlsConnect(
            {
              host: url.hostname,
              port: Number(url.port),
              ca: options.ca.certPem,
              servername: url.hostname,
              ...as.credential,
            },
            () => resolve(out),
          );
          out.once('error', () => resolve(undefined));
        });
        if (upstream !== undefined) {
          const lines = [`${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/1.1`];
          for (const [name, value] of Object.entries(as.headers)) {
            for (const one of Array.isArray(value) ? value : [value])
              if (one !== undefined) lines.push(`${name}: ${one}`);
          }
          upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
          if (head.length > 0) upstream.write(head);
          upstream.on('error', () => socket.destroy());
          socket.on('close', () => upstream.destroy());
          upstream.on('close', () => socket.destroy());
          upstream.pipe(socket).pipe(upstream);
          return;
        }
      }
      if (Date.now() > until || socket.destroyed) {
        socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
        return;
      }
      await sleep(FORWARD_RETRY_INTERVAL_MS);
    }
  }

  /** Appends what is queued to etcd, fenced on this instance's election key. */
  function flush(): Promise<void> {
    writing = writing.then(async () => {
      while (queue.length > 0) {
        const batch = queue.splice(0, CHANGES_PER_TRANSACTION);
        // The snapshot of a new cluster is queued ahead of changes made before it was taken: the highest wins.
        persistedVersion = Math.max(persistedVersion, ...batch.map((change) => change.resourceVersion));
        const txn = client.if(campaignKey!, 'Create', '>', 0);
        // etcd refuses a transaction that names a key twice; within one transaction the last change of a
        // key is the one that counts (an object created and patched at once, the snapshot of a new cluster).
        const latest = new Map(batch.map((change) => [change.key, change]));
        const ops = [...latest.values()].map((change) =>
          change.object === undefined
            ? client.delete().key(change.key)
            : client.put(change.key).value(JSON.stringify(change.object)),
        );
        const result = await txn
          .then(...ops, client.put(ETCD_RESOURCE_VERSION_KEY).value(String(persistedVersion)))
          .commit();
        if (!result.succeeded) fatal('lost the lead while writing to etcd');
      }
    });
    writing = writing.catch((error: unknown) => fatal(`etcd refused a write: ${(error as Error).message}`));
    return writing;
  }

  async function lead(campaign: Campaign): Promise<void> {
    campaignKey = await campaign.getCampaignKey();
    const snapshot = await readDatastore(client);
    const server = await options.startApiServer(snapshot);
    server.store.subscribe((event: StoreEvent) => {
      queue.push({
        key: registryKey(event.object),
        ...(event.type === 'DELETED' ? {} : { object: event.object }),
        resourceVersion: event.resourceVersion,
      });
      void flush();
    });
    if (snapshot === undefined) {
      // A new cluster: what the API server made at start-up goes to etcd first (later changes, queued
      // since, come after and are newer).
      const { resourceVersion, objects } = server.store.snapshot();
      queue.unshift(...objects.map((object) => ({ key: registryKey(object), object, resourceVersion })));
      if (queue.length === 0) await client.put(ETCD_RESOURCE_VERSION_KEY).value(String(resourceVersion));
      await flush();
    }
    apiServer = server;
    leader = ownUrl;
    options.log(`leads: serving the API from etcd at ${ownUrl} (resourceVersion ${server.store.resourceVersion})`);
  }

  const election = client.election(ELECTION, LEADER_LEASE_TTL_S);
  const observer: ElectionObserver = await election.observe();
  leader = observer.leader();
  observer.on('change', (value: string | undefined) => {
    if (apiServer === undefined) leader = value;
  });
  observer.on('error', (error: Error) => options.log(`watching the leader: ${error.message}`));
  let campaign: Campaign;
  /**
   * Campaigns. A follower whose campaign fails (its lease lapsed: a busy
   * machine, its member without quorum for a while) campaigns again; a
   * leader's failing means another may lead, and its store may no longer be
   * the datastore's: it stops.
   */
  const campaignAgain = (): void => {
    campaign = election.campaign(ownUrl);
    campaign.on('elected', () => {
      lead(campaign).catch((error: unknown) => fatal(`could not lead: ${(error as Error).message}`));
    });
    campaign.on('error', (error: Error) => {
      if (isStopping) return;
      if (apiServer !== undefined) {
        fatal(`the campaign failed: ${error.message}`);
        return;
      }
      options.log(`the campaign failed (${error.message}): campaigning again`);
      setTimeout(campaignAgain, FORWARD_RETRY_INTERVAL_MS);
    });
  };
  campaignAgain();

  const ready = (async () => {
    while (leader === undefined) await sleep(FORWARD_RETRY_INTERVAL_MS);
  })();

  return {
    ready,
    isLeading: () => apiServer !== undefined,
    async stop() {
      isStopping = true;
      listener.close();
      front.close();
      for (const socket of accepted) socket.destroy();
      // Bounded: the last member of a cluster whose others are gone has no quorum, and nothing it
      // writes or resigns would be answered; the service manager gives a stopping service 10 s.
      if (apiServer !== undefined) {
        await apiServer.stop();
        await withTimeout(flush(), STOP_STEP_TIMEOUT_MS).catch(() => options.log('stopped with changes not in etcd'));
      }
      await withTimeout(campaign.resign(), STOP_STEP_TIMEOUT_MS).catch(() => undefined);
      await withTimeout(observer.cancel(), STOP_STEP_TIMEOUT_MS).catch(() => undefined);
      client.close();
    },
  };
}
