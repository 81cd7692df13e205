/**
 * A FAKE of the hub's operator API for rollouts and cluster holds
 * (src/rollout/api.ts is the contract), for the hub client's and the CLI's
 * unit tests: real HTTPS on 127.0.0.1 with a test CA, a bearer token, the
 * routes and JSON views of the contract. It is not the hub: no clusters,
 * no controller. A test moves a rollout's status by hand
 * ({@link FakeOperatorApi.setStatus}), which wakes long polls as the hub's
 * would. It refuses what the real hub refuses at its door: a wrong token
 * (401), a document parseRollout rejects (400, its message), a name in the
 * path that differs from `metadata.name` (400), an unknown rollout (404).
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHubConfig, type HubConfig } from '../../src/hub/contract/hub-config.js';
import type {
  ApplyResult,
  ClusterHold,
  DeleteResult,
  PhaseCounts,
  RolloutListItem,
  RolloutStatusView,
} from '../../src/rollout/api.js';
import { parseRollout } from '../../src/rollout/spec.js';
import { createCa, issueCertificate } from '../../src/trust/pki.js';

/** The fake's token: the only one it takes. */
export const FAKE_TOKEN = 'edgeadm-hub-faketoken';

/** Zero counts. */
export function zeroCounts(): PhaseCounts {
  return { waiting: 0, held: 0, 'offline-pending': 0, applying: 0, progressing: 0, ready: 0, failed: 0 };
}

interface StoredRollout {
  document: Record<string, unknown>;
  revisions: Array<Record<string, unknown>>;
  view: RolloutStatusView;
}

/** One request the fake saw. */
export interface SeenRequest {
  method: string;
  path: string;
  bodyBytes: number;
}

/** A running fake. */
export interface FakeOperatorApi {
  url: string;
  caPem: string;
  /** A hub config file for it (mode 0600), and the same as an object. */
  hubConfigPath: string;
  hubConfig: HubConfig;
  requests: SeenRequest[];
  /** TLS connections accepted so far. */
  connections(): number;
  rollouts: Map<string, StoredRollout>;
  holds: Map<string, ClusterHold>;
  properties: Map<string, Record<string, string>>;
  /** The dry-run plan answered for any rollout. */
  dryRunPlan: NonNullable<ApplyResult['dryRun']>;
  /** Changes a rollout's status (bumping statusVersion) and answers waiting long polls. */
  setStatus(name: string, change: Partial<RolloutStatusView>): void;
  /** The hub's STATUS_LONG_POLL_MS for this fake (short, so unchanged answers come quickly). */
  longPollMs: number;
  /** Stops listening and drops every connection, as a hub going down; {@link listenAgain} brings it back on the same port. */
  stopListening(): Promise<void>;
  listenAgain(): Promise<void>;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Starts the fake on 127.0.0.1. */
export async function startFakeOperatorApi(options: { longPollMs?: number } = {}): Promise<FakeOperatorApi> {
  const ca = await createCa({ commonName: 'fake-hub-ca' });
  const serverCert = await issueCertificate({
    ca,
    commonName: 'fake-hub',
    usages: ['server'],
    ipAddresses: ['127.0.0.1'],
  });
  const rollouts = new Map<string, StoredRollout>();
  const holds = new Map<string, ClusterHold>();
  const properties = new Map<string, Record<string, string>>();
  const requests: SeenRequest[] = [];
  const waiters = new Map<string, Set<() => void>>();
  let connections = 0;

  const fake = {
    requests,
    rollouts,
    holds,
    properties,
    longPollMs: options.longPollMs ?? 200,
    dryRunPlan: {
      waves: [['store-1'], ['store-2', 'store-3']],
      copies: [
        { cluster: 'store-1', revision: '1-abc', objects: [{ kind: 'ConfigMap', metadata: { name: 'site' } }] },
        { cluster: 'store-2', error: 'spec.resources[0].data.site: the cluster has no label "region"' },
        // The hub leaves out the objects past its answer's size bound.
        { cluster: 'store-3', revision: '1-def' },
      ],
    },
    setStatus(name: string, change: Partial<RolloutStatusView>): void {
      const stored = rollouts.get(name);
      if (stored === undefined) throw new Error(`no rollout ${name}`);
      stored.view = { ...stored.view, ...change, statusVersion: stored.view.statusVersion + 1 };
      for (const wake of waiters.get(name) ?? []) wake();
      waiters.delete(name);
    },
  };

  function viewOf(stored: StoredRollout, withClusters: boolean): RolloutStatusView {
    if (withClusters) return stored.view;
    const { clusters: _rows, ...view } = stored.view;
    return view;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://fake');
    const body = await readBody(req);
    requests.push({ method: req.method ?? '', path: `${url.pathname}${url.search}`, bodyBytes: body.length });
    if (req.headers.authorization !== `Bearer ${FAKE_TOKEN}`) {
      return send(res, 401, { code: 'E_HUB_UNAUTHORIZED', message: 'a valid hub token is required' });
    }
    const json = (): Record<string, unknown> => JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    const rollout = /^\/hub\/v1\/rollouts\/([^/]+)(\/[a-z]+)?$/.exec(url.pathname);
    const cluster = /^\/hub\/v1\/clusters\/([^/]+)\/(hold|properties)$/.exec(url.pathname);
    if (url.pathname === '/hub/v1/rollouts' && req.method === 'GET') {
      const list: RolloutListItem[] = [...rollouts.values()].map(({ view }) => ({
        name: view.name,
        revision: view.revision,
        state: view.state,
        owner: view.owner,
        clusters: Object.values(view.counts).reduce((a, b) => a + b, 0),
        counts: view.counts,
        updatedAt: view.updatedAt,
      }));
      return send(res, 200, { rollouts: list });
    }
    if (rollout) {
      const name = decodeURIComponent(rollout[1] as string);
      const action = rollout[2];
      const stored = rollouts.get(name);
      if (req.method === 'PUT' && action === undefined) {
        const document = json();
        try {
          parseRollout(document);
        } catch (error) {
          return send(res, 400, { code: 'E_ROLLOUT_INVALID', message: (error as Error).message });
        }
        if ((document['metadata'] as { name?: unknown }).name !== name) {
          return send(res, 400, { code: 'E_HUB_BAD_REQUEST', message: 'the name in the path is not metadata.name' });
        }
        const isUnchanged = stored !== undefined && JSON.stringify(stored.document) === JSON.stringify(document);
        const revision = stored === undefined ? 1 : isUnchanged ? stored.view.revision : stored.view.revision + 1;
        if (url.searchParams.get('dryRun') === 'true') {
          return send(res, 200, {
            name,
            revision,
            isUnchanged,
            isCreated: stored === undefined,
            dryRun: fake.dryRunPlan,
          } satisfies ApplyResult);
        }
        if (stored === undefined) {
          rollouts.set(name, {
            document,
            revisions: [document],
            view: {
              name,
              revision,
              state: 'progressing',
              statusVersion: 1,
              owner: 'admin',
              currentWave: 0,
              waves: [],
              counts: zeroCounts(),
              summaries: [],
              updatedAt: new Date(0).toISOString(),
            },
          });
        } else if (!isUnchanged) {
          stored.document = document;
          stored.revisions.push(document);
          fake.setStatus(name, { revision, state: 'progressing' });
        }
        return send(res, 200, { name, revision, isUnchanged, isCreated: stored === undefined } satisfies ApplyResult);
      }
      if (stored === undefined) return send(res, 404, { code: 'E_ROLLOUT_NOT_FOUND', message: `no rollout "${name}"` });
      const withClusters = url.searchParams.get('clusters') === 'true';
      if (req.method === 'GET' && action === undefined) {
        const from = url.searchParams.get('waitForChangeFrom');
        if (from !== null && Number(from) === stored.view.statusVersion) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, fake.longPollMs).unref();
            const set = waiters.get(name) ?? new Set();
            set.add(() => {
              clearTimeout(timer);
              resolve();
            });
            waiters.set(name, set);
          });
        }
        return send(res, 200, viewOf(rollouts.get(name) ?? stored, withClusters));
      }
      if (req.method === 'GET' && action === '/document') {
        return send(res, 200, { revision: stored.view.revision, document: stored.document });
      }
      if (req.method === 'DELETE' && action === undefined) {
        rollouts.delete(name);
        return send(res, 200, { name, removed: ['store-1'], pendingRemovals: ['store-2'] } satisfies DeleteResult);
      }
      if (req.method === 'POST') {
        const states = { '/pause': 'paused', '/resume': 'progressing', '/abort': 'aborted' } as const;
        if (action === '/undo') {
          const previous = stored.revisions.at(-2);
          if (previous === undefined) {
            return send(res, 409, { code: 'E_ROLLOUT_NO_PREVIOUS', message: 'there is no previous revision' });
          }
          stored.document = previous;
          stored.revisions.push(previous);
          fake.setStatus(name, { revision: stored.view.revision + 1, state: 'progressing' });
          return send(res, 200, stored.view);
        }
        const state = states[action as keyof typeof states];
        if (state !== undefined) {
          fake.setStatus(name, { state });
          return send(res, 200, stored.view);
        }
      }
    }
    if (cluster) {
      const name = decodeURIComponent(cluster[1] as string);
      const base = { name, labels: {}, state: 'Connected', registeredAt: '', certNotAfter: '' };
      if (cluster[2] === 'hold' && req.method === 'PUT') {
        const reason = json()['reason'];
        if (typeof reason !== 'string' || reason === '') {
          return send(res, 400, { code: 'E_HUB_BAD_REQUEST', message: 'a hold needs a reason' });
        }
        holds.set(name, { reason, since: new Date(0).toISOString(), by: 'admin' });
        return send(res, 200, { ...base, hold: holds.get(name) });
      }
      if (cluster[2] === 'hold' && req.method === 'DELETE') {
        holds.delete(name);
        return send(res, 200, base);
      }
      if (cluster[2] === 'properties' && req.method === 'PUT') {
        properties.set(name, json()['properties'] as Record<string, string>);
        return send(res, 200, { ...base, properties: properties.get(name) });
      }
    }
    return send(res, 404, { code: 'E_HUB_NOT_FOUND', message: `no route ${req.method} ${url.pathname}` });
  }

  const server: Server = createServer({ cert: serverCert.certPem, key: serverCert.keyPem }, (req, res) => {
    handle(req, res).catch((error: unknown) => send(res, 500, { code: 'E_FAKE', message: String(error) }));
  });
  server.on('secureConnection', () => (connections += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `https://127.0.0.1:${port}`;
  const stopListening = (): Promise<void> =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  const hubConfig: HubConfig = { server: url, caPem: ca.certPem, user: 'admin', token: FAKE_TOKEN };
  const hubConfigPath = join(mkdtempSync(join(tmpdir(), 'fake-hub-')), 'hub.yaml');
  writeHubConfig(hubConfigPath, hubConfig);
  return Object.assign(fake, {
    url,
    caPem: ca.certPem,
    hubConfig,
    hubConfigPath,
    connections: () => connections,
    stopListening,
    listenAgain: () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve)),
    close: () => (server.listening ? stopListening() : Promise.resolve()),
  });
}
