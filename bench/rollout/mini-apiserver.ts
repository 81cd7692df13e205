/**
 * A SMALL SIMULATED API server for the rollout benchmark: one HTTPS server
 * per agent process serving every cluster of that process, each cluster's
 * objects kept apart by the bearer token its clients send (the cluster's
 * name). The full simulated API server of test/support is too heavy to run
 * once per cluster at 10,000 clusters; this one does only what edgeadm's
 * rollout agent (CopyAgent, CopyApplier) asks of a cluster:
 *
 * - discovery of `v1` (namespaces, configmaps) and `apps/v1` (deployments);
 * - server-side apply (`PATCH` with `application/apply-patch+yaml`): the
 *   object is stored as sent, `metadata.generation` goes up when its spec
 *   or data changes;
 * - `GET` and `DELETE` of one object, `GET` of a namespace's ConfigMaps with
 *   a `labelSelector` naming a label key (the agent's inventories);
 * - a Deployment's `.status`: every replica updated and available
 *   `readyAfterMs` after its last apply, none before.
 *
 * It checks no RBAC, ignores impersonation, and keeps nothing on disk: it is
 * not a Kubernetes API server, only what the benchmark needs of one.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;

/** When a Deployment of a cluster was applied and first read back ready (epoch ms), keyed `cluster/name`. */
export interface ClusterTimes {
  deploymentAppliedAt?: number;
  firstReadyReadAt?: number;
  requests: number;
}

interface Stored {
  object: Json;
  appliedAt: number;
}

const RESOURCES: Record<string, { kind: string; isNamespaced: boolean }> = {
  namespaces: { kind: 'Namespace', isNamespaced: false },
  configmaps: { kind: 'ConfigMap', isNamespaced: true },
  deployments: { kind: 'Deployment', isNamespaced: true },
};
const DISCOVERY: Record<string, Json> = {
  '/api/v1': {
    kind: 'APIResourceList',
    groupVersion: 'v1',
    resources: [
      { name: 'namespaces', kind: 'Namespace', namespaced: false, verbs: ['get', 'patch', 'delete', 'list'] },
      { name: 'configmaps', kind: 'ConfigMap', namespaced: true, verbs: ['get', 'patch', 'delete', 'list'] },
    ],
  },
  '/apis/apps/v1': {
    kind: 'APIResourceList',
    groupVersion: 'apps/v1',
    resources: [
      { name: 'deployments', kind: 'Deployment', namespaced: true, verbs: ['get', 'patch', 'delete', 'list'] },
    ],
  },
};

/** The running server: its URL, the CA to trust, each cluster's times. */
export interface MiniApiServer {
  url: string;
  caPem: string;
  /** By `cluster/deployment` (and `cluster/` for the request count). */
  times: Map<string, ClusterTimes>;
  stop(): Promise<void>;
}

/** Starts the server on loopback with the given certificate (its CA is `caPem`). */
export async function startMiniApiServer(options: {
  certPem: string;
  keyPem: string;
  caPem: string;
  readyAfterMs: number;
}): Promise<MiniApiServer> {
  const clusters = new Map<string, Map<string, Stored>>();
  const times = new Map<string, ClusterTimes>();
  const timesOf = (cluster: string): ClusterTimes => {
    let entry = times.get(cluster);
    if (entry === undefined) times.set(cluster, (entry = { requests: 0 }));
    return entry;
  };
  const send = (res: ServerResponse, status: number, body: unknown): void => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  };
  const notFound = (res: ServerResponse, what: string): void =>
    send(res, 404, { kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404, message: `${what} not found` });

  const withStatus = (cluster: string, stored: Stored): Json => {
    if (stored.object['kind'] !== 'Deployment') return stored.object;
    const spec = (stored.object['spec'] ?? {}) as Json;
    const wanted = typeof spec['replicas'] === 'number' ? spec['replicas'] : 1;
    const generation = (stored.object['metadata'] as Json)['generation'];
    const isReady = Date.now() - stored.appliedAt >= options.readyAfterMs;
    if (isReady) {
      const entry = timesOf(`${cluster}/${String((stored.object['metadata'] as Json)['name'])}`);
      entry.firstReadyReadAt ??= Date.now();
    }
    const n = isReady ? wanted : 0;
    return {
      ...stored.object,
      status: {
        observedGeneration: generation,
        replicas: wanted,
        updatedReplicas: n,
        readyReplicas: n,
        availableReplicas: n,
      },
    };
  };

  const handle = (req: IncomingMessage, res: ServerResponse, body: string): void => {
    const cluster = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (cluster === undefined) return send(res, 401, { kind: 'Status', code: 401, message: 'Unauthorized' });
    timesOf(`${cluster}/`).requests += 1;
    const url = new URL(req.url ?? '/', 'https://mini');
    const discovery = DISCOVERY[url.pathname];
    if (req.method === 'GET' && discovery !== undefined) return send(res, 200, discovery);
    // /api/v1/[namespaces/NS/]RESOURCE[/NAME] or /apis/apps/v1/...
    const match = /^\/(?:api\/v1|apis\/apps\/v1)(?:\/namespaces\/([^/]+))?\/([a-z]+)(?:\/([^/]+))?$/.exec(url.pathname);
    // A namespace itself: /api/v1/namespaces/NAME
    const namespaceOnly = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(url.pathname);
    let resource: string;
    let namespace: string | undefined;
    let name: string | undefined;
    if (namespaceOnly !== null) {
      resource = 'namespaces';
      name = namespaceOnly[1];
    } else if (match !== null) {
      [, namespace, resource = '', name] = match;
    } else return notFound(res, url.pathname);
    if (RESOURCES[resource] === undefined) return notFound(res, resource);
    let store = clusters.get(cluster);
    if (store === undefined) clusters.set(cluster, (store = new Map()));
    if (name === undefined) {
      if (req.method !== 'GET') return send(res, 405, { kind: 'Status', code: 405, message: 'method not allowed' });
      const labelKey = url.searchParams.get('labelSelector') ?? undefined;
      const prefix = `${resource}/${namespace ?? ''}/`;
      const items = [...store.entries()]
        .filter(([key]) => key.startsWith(prefix))
        .map(([, stored]) => withStatus(cluster, stored))
        .filter(
          (o) =>
            labelKey === undefined || ((o['metadata'] as Json)['labels'] as Json | undefined)?.[labelKey] !== undefined,
        );
      return send(res, 200, { kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items });
    }
    const key = `${resource}/${namespace ?? ''}/${name}`;
    const stored = store.get(key);
    if (req.method === 'GET')
      return stored === undefined ? notFound(res, key) : send(res, 200, withStatus(cluster, stored));
    if (req.method === 'DELETE') {
      if (stored === undefined) return notFound(res, key);
      store.delete(key);
      return send(res, 200, { kind: 'Status', status: 'Success' });
    }
    if (req.method === 'PATCH') {
      if (
        req.headers['content-type'] !== 'application/apply-patch+yaml' ||
        url.searchParams.get('fieldManager') === null
      )
        return send(res, 415, { kind: 'Status', code: 415, message: 'only server-side apply with a field manager' });
      let sent: Json;
      try {
        sent = JSON.parse(body) as Json;
      } catch {
        return send(res, 400, { kind: 'Status', code: 400, message: 'the body is not JSON' });
      }
      const metadata = (sent['metadata'] ?? {}) as Json;
      const before = stored?.object;
      const isChanged =
        before === undefined ||
        JSON.stringify(before['spec'] ?? before['data']) !== JSON.stringify(sent['spec'] ?? sent['data']);
      const generation = ((before?.['metadata'] as Json | undefined)?.['generation'] as number | undefined) ?? 0;
      const object: Json = {
        ...sent,
        metadata: {
          ...metadata,
          ...(namespace === undefined ? {} : { namespace }),
          uid: (before?.['metadata'] as Json | undefined)?.['uid'] ?? `${cluster}-${key}`,
          generation: isChanged ? generation + 1 : generation,
        },
      };
      const now = Date.now();
      store.set(key, { object, appliedAt: isChanged || stored === undefined ? now : stored.appliedAt });
      if (resource === 'deployments') timesOf(`${cluster}/${name}`).deploymentAppliedAt = now;
      return send(res, 200, withStatus(cluster, store.get(key) as Stored));
    }
    return send(res, 405, { kind: 'Status', code: 405, message: 'method not allowed' });
  };

  const server: Server = createServer({ cert: options.certPem, key: options.keyPem, keepAliveTimeout: 120_000 });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  // The accept queue kube-apiserver has (Go listens with the system's somaxconn), not Node's default of 511: with
  // hundreds of clusters' agents in one process, 511 dropped their connects and the kernel retried them for minutes.
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    caPem: options.caPem,
    times,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
