/**
 * The SIMULATED kubelet's pod source and "container runtime" (shared by the
 * simulated k3s agent and the simulated kubelet of sim-kubeadm; neither is
 * the kubelet): how a node learns which pods to run from the API server,
 * the way a real kubelet does, so that an edge node's offline restart reads
 * them through the edge-proxy exactly as a real one would.
 *
 * What the real kubelet does, and this module repeats (kubernetes
 * `pkg/kubelet/kubelet.go` NewMainKubelet, `pkg/kubelet/config/apiserver.go`
 * NewSourceApiserver, client-go `tools/cache` Reflector):
 *
 * 1. A Node informer restricted to its own Node (`fieldSelector=
 *    metadata.name=<node>`): LIST, then WATCH from the list's
 *    resourceVersion. Until that informer has synced, no pod is read.
 * 2. Then the pod source: a Reflector over `/api/v1/pods` with
 *    `fieldSelector=spec.nodeName=<node>`, all namespaces. The Reflector's
 *    first LIST asks `resourceVersion=0` (served from the watch cache) with
 *    `limit=500`; the WATCH follows with `allowWatchBookmarks=true`, the
 *    list's resourceVersion and a `timeoutSeconds` between 5 and 10
 *    minutes. A failed LIST is retried after a back-off, a WATCH that ends
 *    is re-opened from the last resourceVersion, and a 410 Expired makes it
 *    LIST again.
 * 3. Every pod of the set is run: what the kubelet asks of its container
 *    runtime is, here, one file per pod under {@link SIM_RUNTIME_DIR}
 *    (`<uid>.json`: namespace, name, uid, start time). That directory is on
 *    /run, a tmpfs, so a reboot loses it as a real runtime loses its
 *    containers; the pods come back only if the kubelet reads them again. A
 *    pod that leaves the set is stopped (its file removed).
 * 4. The status of each started pod is patched (`pods/<name>/status`,
 *    strategic merge patch, as the kubelet's status manager does) until the
 *    API server takes it: offline it is refused and retried.
 *
 * Not modelled: static pods of the pod source, pod admission, images,
 * containers, probes, restart policies, graceful termination, volumes.
 */
import { mkdir, readdir, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { call, sleep, writeAtomically, type SimCall, type SimNodeOptions } from './sim-node.js';

/** The simulated container runtime's state: one file per running pod, on /run (lost at a reboot). */
export const SIM_RUNTIME_DIR = '/run/sim-kubelet/pods';
/** The Reflector's first LIST page size (client-go's pager default). */
const LIST_LIMIT = 500;
/** The WATCH timeout the Reflector asks for (client-go: minWatchTimeout 5 min, randomised up to 10). */
const WATCH_TIMEOUT_SECONDS = 300;
/** Between failed LISTs (client-go backs off from 800 ms; one fixed step is enough here). */
const RELIST_BACKOFF_MS = 1_000;
/** How often a status update refused (offline) is tried again (the status manager's sync period is 10 s). */
const STATUS_RETRY_MS = 1_000;
/** How often the pod source checks whether the Node informer synced (WaitForAPIServerSyncPeriod). */
const NODE_SYNC_POLL_MS = 1_000;
/** Bound of one watch event line. */
const MAX_EVENT_BYTES = 4 * 1024 * 1024;

interface PodObject {
  metadata: { name: string; namespace: string; uid: string; resourceVersion?: string };
  spec?: { containers?: Array<{ name: string; image?: string }> };
}

interface ListAnswer {
  metadata?: { resourceVersion?: string };
  items?: PodObject[];
}

/** What the runtime file of a started pod holds (tests read it). */
export interface SimRunningPod {
  namespace: string;
  name: string;
  uid: string;
  startedAt: string;
}

function accessOf(node: SimNodeOptions): Omit<SimCall, 'method' | 'url'> {
  return {
    caPem: node.caPem,
    ...(node.token ? { token: node.token } : {}),
    ...(node.certPem ? { certPem: node.certPem } : {}),
    ...(node.keyPem ? { keyPem: node.keyPem } : {}),
  };
}

/**
 * One Reflector: LIST then WATCH `path` with `fieldSelector`, calling
 * `onSet` with the whole set after the LIST and after every event (the
 * kubelet's UndeltaStore hands the pod config the whole set each time).
 * Runs until `isStopping`.
 */
async function reflect<T extends PodObject>(options: {
  node: SimNodeOptions;
  path: string;
  fieldSelector: string;
  onSet: (objects: T[]) => void;
  onSynced?: () => void;
  isStopping: () => boolean;
  log: (message: string) => void;
}): Promise<void> {
  const { node, path, isStopping, log } = options;
  const selector = encodeURIComponent(options.fieldSelector);
  const items = new Map<string, T>();
  const keyOf = (object: T): string => `${object.metadata.namespace ?? ''}/${object.metadata.name}`;
  while (!isStopping()) {
    const listUrl = `${node.server}${path}?fieldSelector=${selector}&limit=${LIST_LIMIT}&resourceVersion=0`;
    const listed = await call({ ...accessOf(node), method: 'GET', url: listUrl }).catch((error: Error) => ({
      status: 0,
      body: error.message,
    }));
    if (listed.status !== 200) {
      log(`LIST ${path}?fieldSelector=${options.fieldSelector}: HTTP ${listed.status} ${listed.body.slice(0, 200)}`);
      await sleep(RELIST_BACKOFF_MS);
      continue;
    }
    const list = JSON.parse(listed.body) as ListAnswer;
    items.clear();
    for (const item of (list.items ?? []) as T[]) items.set(keyOf(item), item);
    options.onSet([...items.values()]);
    options.onSynced?.();
    let resourceVersion = list.metadata?.resourceVersion ?? '0';
    // WATCH until it must LIST again (410) or the process stops.
    for (;;) {
      if (isStopping()) return;
      const outcome = await watchOnce({
        node,
        url: `${node.server}${path}?allowWatchBookmarks=true&fieldSelector=${selector}&resourceVersion=${resourceVersion}&timeoutSeconds=${WATCH_TIMEOUT_SECONDS}&watch=true`,
        onEvent: (type, object) => {
          const version = (object as PodObject).metadata?.resourceVersion;
          if (version) resourceVersion = version;
          if (type === 'ADDED' || type === 'MODIFIED') items.set(keyOf(object as T), object as T);
          else if (type === 'DELETED') items.delete(keyOf(object as T));
          else return;
          options.onSet([...items.values()]);
        },
      });
      if (outcome === 'expired') break;
      if (outcome === 'failed') await sleep(RELIST_BACKOFF_MS);
    }
  }
}

/** One WATCH request: `ended` (timeout or close: watch again), `expired` (410: LIST again) or `failed`. */
function watchOnce(options: {
  node: SimNodeOptions;
  url: string;
  onEvent: (type: string, object: unknown) => void;
}): Promise<'ended' | 'expired' | 'failed'> {
  const access = accessOf(options.node);
  return new Promise((resolve) => {
    const req = request(
      options.url,
      {
        method: 'GET',
        ...(access.caPem ? { ca: access.caPem } : {}),
        ...(access.certPem && access.keyPem ? { cert: access.certPem, key: access.keyPem } : {}),
        headers: {
          Accept: 'application/json',
          ...(access.token ? { Authorization: `Bearer ${access.token}` } : {}),
        },
      },
      (response) => {
        if (response.statusCode === 410) {
          response.resume();
          return resolve('expired');
        }
        if (response.statusCode !== 200) {
          response.resume();
          return resolve('failed');
        }
        let pending = '';
        let outcome: 'ended' | 'expired' = 'ended';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          pending += chunk;
          if (pending.length > MAX_EVENT_BYTES) {
            req.destroy();
            return;
          }
          let newline = pending.indexOf('\n');
          while (newline >= 0) {
            const line = pending.slice(0, newline).trim();
            pending = pending.slice(newline + 1);
            newline = pending.indexOf('\n');
            if (!line) continue;
            let event: { type: string; object: { code?: number } };
            try {
              event = JSON.parse(line) as typeof event;
            } catch {
              // Not an event: what a client-go watch decoder fails on; the watch is dropped and opened again.
              req.destroy();
              return;
            }
            if (event.type === 'ERROR') {
              if (event.object.code === 410) outcome = 'expired';
              continue;
            }
            options.onEvent(event.type, event.object);
          }
        });
        response.on('end', () => resolve(outcome));
        response.on('error', () => resolve('failed'));
        response.on('aborted', () => resolve('failed'));
      },
    );
    req.on('error', () => resolve('failed'));
    req.end();
  });
}

/** Writes a started pod's status until the API server takes it (refused offline: retried). */
async function reportStatus(
  node: SimNodeOptions,
  pod: SimRunningPod,
  containers: readonly string[],
  isCurrent: () => boolean,
): Promise<void> {
  while (isCurrent()) {
    const answer = await call({
      ...accessOf(node),
      method: 'PATCH',
      url: `${node.server}/api/v1/namespaces/${pod.namespace}/pods/${pod.name}/status`,
      contentType: 'application/strategic-merge-patch+json',
      body: {
        status: {
          phase: 'Running',
          conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: pod.startedAt }],
          containerStatuses: containers.map((name) => ({
            name,
            ready: true,
            started: true,
            restartCount: 0,
            state: { running: { startedAt: pod.startedAt } },
          })),
        },
      },
    }).catch(() => ({ status: 0, body: '' }));
    if (answer.status >= 200 && answer.status < 300) return;
    await sleep(STATUS_RETRY_MS);
  }
}

/**
 * Runs the node's pods as the kubelet does (see the module comment) until
 * `isStopping`: waits for the Node informer, then keeps the runtime in step
 * with the pods bound to the node.
 */
export async function runPodSource(
  node: SimNodeOptions,
  log: (message: string) => void,
  isStopping: () => boolean = () => false,
): Promise<void> {
  await mkdir(SIM_RUNTIME_DIR, { recursive: true, mode: 0o700 });
  let isNodeSynced = false;
  void reflect({
    node,
    path: '/api/v1/nodes',
    fieldSelector: `metadata.name=${node.name}`,
    onSet: () => {},
    onSynced: () => {
      if (!isNodeSynced) log(`Node informer synced (${node.name})`);
      isNodeSynced = true;
    },
    isStopping,
    log,
  });
  log('waiting for node sync before watching apiserver pods');
  while (!isNodeSynced && !isStopping()) await sleep(NODE_SYNC_POLL_MS);
  log('watching apiserver pods');
  const running = new Map<string, SimRunningPod>();
  for (const file of await readdir(SIM_RUNTIME_DIR)) {
    // A kubelet restarted without a reboot finds its containers still running.
    if (file.endsWith('.json'))
      running.set(file.slice(0, -'.json'.length), { uid: '', name: '', namespace: '', startedAt: '' });
  }
  await reflect<PodObject>({
    node,
    path: '/api/v1/pods',
    fieldSelector: `spec.nodeName=${node.name}`,
    onSet: (pods) => {
      const wanted = new Set(pods.map((pod) => pod.metadata.uid));
      for (const uid of [...running.keys()]) {
        if (wanted.has(uid)) continue;
        running.delete(uid);
        void rm(join(SIM_RUNTIME_DIR, `${uid}.json`), { force: true });
        log(`stopped pod ${uid}: no longer bound to ${node.name}`);
      }
      for (const pod of pods) {
        const { uid, name, namespace } = pod.metadata;
        if (running.has(uid)) continue;
        const started: SimRunningPod = {
          namespace,
          name,
          uid,
          startedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        };
        running.set(uid, started);
        void writeAtomically(join(SIM_RUNTIME_DIR, `${uid}.json`), JSON.stringify(started), 0o600);
        log(`started pod ${namespace}/${name} (uid ${uid})`);
        const containers = (pod.spec?.containers ?? []).map((container) => container.name);
        void reportStatus(node, started, containers, () => running.get(uid) === started);
      }
    },
    isStopping,
    log,
  });
}
