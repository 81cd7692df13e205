/**
 * Cordon and drain of one node through the eviction API, with kubectl
 * drain's rules for which Pods go (kubectl `pkg/drain/filters.go`, read
 * upstream, written here independently):
 * - mirror Pods (static Pods, annotation `kubernetes.io/config.mirror`) are
 *   skipped: the kubelet owns them;
 * - DaemonSet Pods are skipped (kubectl's `--ignore-daemonsets`): their
 *   controller would put them back at once; one whose DaemonSet is gone is
 *   refused unless forced;
 * - Pods that declare no controller (bare Pods) and Pods with emptyDir data
 *   are refused unless forced, as kubectl refuses them without `--force` /
 *   `--delete-emptydir-data`: nothing would recreate them, or their data
 *   goes with them;
 * - Succeeded and Failed Pods go without question.
 *
 * Refusals are found before anything is evicted, so a refused drain evicts
 * nothing. Evictions go through `pods/<name>/eviction`, so that the API
 * server holds every PodDisruptionBudget; a 429 is asked again every 5 s
 * (kubectl's interval) until the drain's deadline, and then stops the drain
 * with {@link DrainError} `E_DRAIN_DISRUPTION_BUDGET`, unless forced: a
 * forced drain deletes a Pod its budget protects (as `kubectl drain
 * --disable-eviction` would), and says so.
 *
 * Pure where it can be: {@link classifyPod} decides without I/O; time and
 * sleeping are injected into {@link drainNode}.
 */
import { EdgeadmError, ExitCode } from '../../errors.js';
import { KubeApiError, type KubeClient, type KubeObject } from '../../kube/client.js';
import { DRAIN_REQUEST_TIMEOUT_MS, EVICTION_RETRY_MS, MAX_PODS_IN_MESSAGE, POD_GONE_POLL_MS } from './node-limits.js';

/** The fields of a Pod the drain reads. */
export interface DrainPod extends KubeObject {
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ apiVersion?: string; kind?: string; name?: string; controller?: boolean }>;
    deletionTimestamp?: string;
  };
  spec?: { nodeName?: string; volumes?: Array<{ name?: string; emptyDir?: unknown }> };
  status?: { phase?: string };
}

/** The annotation the kubelet puts on the mirror of a static Pod. */
export const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';

/** Why a Pod may not go without `--force`. */
export type DrainRefusal = 'no-controller' | 'local-storage' | 'daemonset-gone';

/** What the drain does with one Pod. */
export type PodVerdict =
  | { action: 'evict'; warning?: string }
  | { action: 'skip'; why: 'mirror' | 'daemonset' }
  | { action: 'refuse'; why: DrainRefusal };

const REFUSAL_TEXT: Record<DrainRefusal, string> = {
  'no-controller': 'declares no controller (nothing would recreate it)',
  'local-storage': 'has emptyDir data (lost when it goes)',
  'daemonset-gone': 'belongs to a DaemonSet that no longer exists',
};

function controllerOf(pod: DrainPod): { apiVersion?: string; kind?: string; name?: string } | undefined {
  return pod.metadata.ownerReferences?.find((owner) => owner.controller === true);
}

/**
 * kubectl drain's verdict on one Pod (module comment), with DaemonSets
 * ignored. `hasDaemonSet` says whether the Pod's DaemonSet exists.
 */
export function classifyPod(pod: DrainPod, options: { isForced: boolean; hasDaemonSet: boolean }): PodVerdict {
  const phase = pod.status?.phase;
  const isFinished = phase === 'Succeeded' || phase === 'Failed';
  const controller = controllerOf(pod);
  if (controller?.kind === 'DaemonSet' && controller.apiVersion === 'apps/v1' && !isFinished) {
    if (options.hasDaemonSet) return { action: 'skip', why: 'daemonset' };
    return options.isForced
      ? { action: 'evict', warning: REFUSAL_TEXT['daemonset-gone'] }
      : { action: 'refuse', why: 'daemonset-gone' };
  }
  if (pod.metadata.annotations?.[MIRROR_POD_ANNOTATION] !== undefined) return { action: 'skip', why: 'mirror' };
  if (isFinished) return { action: 'evict' };
  if (pod.spec?.volumes?.some((volume) => volume.emptyDir !== undefined && volume.emptyDir !== null)) {
    if (!options.isForced) return { action: 'refuse', why: 'local-storage' };
    if (controller === undefined)
      return { action: 'evict', warning: `${REFUSAL_TEXT['no-controller']}; ${REFUSAL_TEXT['local-storage']}` };
    return { action: 'evict', warning: REFUSAL_TEXT['local-storage'] };
  }
  if (controller === undefined) {
    return options.isForced
      ? { action: 'evict', warning: REFUSAL_TEXT['no-controller'] }
      : { action: 'refuse', why: 'no-controller' };
  }
  return { action: 'evict' };
}

/** A drain that could not finish; nothing more is evicted. */
export class DrainError extends EdgeadmError {
  constructor(
    message: string,
    options: {
      code: 'E_DRAIN_REFUSED' | 'E_DRAIN_DISRUPTION_BUDGET' | 'E_DRAIN_TIMEOUT';
      hints: string[];
      details: Record<string, unknown>;
    },
  ) {
    super(message, { ...options, exitCode: ExitCode.General });
    this.name = 'DrainError';
  }
}

/** Options of {@link drainNode}. */
export interface DrainOptions {
  client: KubeClient;
  nodeName: string;
  /** `--force`: bare Pods, emptyDir Pods and Pods their budget protects go anyway. */
  isForced: boolean;
  timeoutMs: number;
  onLine: (line: string) => void;
  /** Injected for tests. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** What a drain did. */
export interface DrainResult {
  /** `namespace/name` of each Pod evicted (or, forced past its budget, deleted). */
  evicted: string[];
  /** `namespace/name` of each Pod deleted past its PodDisruptionBudget (forced). */
  deletedPastBudget: string[];
  /** `namespace/name` of each Pod left alone (DaemonSet and mirror Pods). */
  skipped: string[];
}

const idOf = (pod: DrainPod): string => `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name}`;

function podPath(pod: DrainPod): string {
  return `/api/v1/namespaces/${encodeURIComponent(pod.metadata.namespace ?? 'default')}/pods/${encodeURIComponent(pod.metadata.name)}`;
}

function listed(ids: string[]): string {
  const shown = ids.slice(0, MAX_PODS_IN_MESSAGE).join(', ');
  return ids.length > MAX_PODS_IN_MESSAGE ? `${shown} and ${ids.length - MAX_PODS_IN_MESSAGE} more` : shown;
}

/** Marks the Node unschedulable (kubectl cordon); returns whether it already was. */
export async function cordonNode(client: KubeClient, nodeName: string): Promise<boolean> {
  const node = await client.request<KubeObject & { spec?: { unschedulable?: boolean } }>(
    'GET',
    `/api/v1/nodes/${encodeURIComponent(nodeName)}`,
    { timeoutMs: DRAIN_REQUEST_TIMEOUT_MS },
  );
  if (node.spec?.unschedulable === true) return true;
  await client.mergePatch(`/api/v1/nodes/${encodeURIComponent(nodeName)}`, { spec: { unschedulable: true } });
  return false;
}

/** Makes the Node schedulable again (kubectl uncordon). */
export async function uncordonNode(client: KubeClient, nodeName: string): Promise<void> {
  await client.mergePatch(`/api/v1/nodes/${encodeURIComponent(nodeName)}`, { spec: { unschedulable: null } });
}

/**
 * Evicts every Pod of the node that may go (module comment) and waits until
 * they are gone.
 *
 * @throws {DrainError} `E_DRAIN_REFUSED` (Pods that need `--force`; nothing
 * evicted), `E_DRAIN_DISRUPTION_BUDGET` (a budget still refused at the
 * deadline), `E_DRAIN_TIMEOUT` (evicted Pods still there at the deadline).
 */
export async function drainNode(options: DrainOptions): Promise<DrainResult> {
  const { client, nodeName } = options;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const deadline = now() + options.timeoutMs;
  const pods = await client.list<DrainPod>('/api/v1/pods', { fieldSelector: `spec.nodeName=${nodeName}` });
  const daemonSets = new Map<string, boolean>();
  const hasDaemonSet = async (pod: DrainPod): Promise<boolean> => {
    const controller = controllerOf(pod);
    if (controller?.kind !== 'DaemonSet' || controller.name === undefined) return false;
    const key = `${pod.metadata.namespace ?? 'default'}/${controller.name}`;
    if (!daemonSets.has(key)) {
      const found = await client.get(
        `/apis/apps/v1/namespaces/${encodeURIComponent(pod.metadata.namespace ?? 'default')}/daemonsets/${encodeURIComponent(controller.name)}`,
      );
      daemonSets.set(key, found !== undefined);
    }
    return daemonSets.get(key)!;
  };
  const toEvict: DrainPod[] = [];
  const skipped: string[] = [];
  const refused: Array<{ pod: string; why: DrainRefusal }> = [];
  for (const pod of pods) {
    const verdict = classifyPod(pod, { isForced: options.isForced, hasDaemonSet: await hasDaemonSet(pod) });
    if (verdict.action === 'skip') skipped.push(idOf(pod));
    else if (verdict.action === 'refuse') refused.push({ pod: idOf(pod), why: verdict.why });
    else {
      if (verdict.warning !== undefined) options.onLine(`[drain] forced: ${idOf(pod)} ${verdict.warning}`);
      toEvict.push(pod);
    }
  }
  if (refused.length > 0) {
    throw new DrainError(
      `cannot drain node ${nodeName}: ${refused.length === 1 ? 'a Pod' : `${refused.length} Pods`} may not be evicted: ${listed(refused.map((r) => `${r.pod} ${REFUSAL_TEXT[r.why]}`))}`,
      {
        code: 'E_DRAIN_REFUSED',
        hints: [
          'Move or delete those Pods yourself, or pass --force to evict them anyway (their data and, for bare Pods, the Pods themselves are lost).',
        ],
        details: { node: nodeName, refused },
      },
    );
  }
  if (skipped.length > 0) options.onLine(`[drain] left alone (DaemonSet or static Pods): ${listed(skipped)}`);
  const evicted: string[] = [];
  const deletedPastBudget: string[] = [];
  for (const pod of toEvict) {
    for (;;) {
      const response = await client.raw('POST', `${podPath(pod)}/eviction`, {
        body: {
          apiVersion: 'policy/v1',
          kind: 'Eviction',
          metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace ?? 'default' },
        },
        timeoutMs: DRAIN_REQUEST_TIMEOUT_MS,
      });
      if (response.status === 201 || response.status === 200 || response.status === 404) {
        if (response.status !== 404) options.onLine(`[drain] evicted ${idOf(pod)}`);
        evicted.push(idOf(pod));
        break;
      }
      if (response.status !== 429) {
        throw new KubeApiError({
          method: 'POST',
          path: `${podPath(pod)}/eviction`,
          status: response.status,
          message: messageOf(response.body),
        });
      }
      const why = budgetMessage(response.body);
      if (options.isForced) {
        await client.delete(podPath(pod));
        options.onLine(`[drain] forced: deleted ${idOf(pod)} past its PodDisruptionBudget (${why})`);
        evicted.push(idOf(pod));
        deletedPastBudget.push(idOf(pod));
        break;
      }
      if (now() + EVICTION_RETRY_MS > deadline) {
        throw new DrainError(
          `cannot drain node ${nodeName}: the eviction of ${idOf(pod)} is refused by its PodDisruptionBudget: ${why}`,
          {
            code: 'E_DRAIN_DISRUPTION_BUDGET',
            hints: [
              'Wait until the budget allows a disruption (more replicas Ready elsewhere), or raise --drain-timeout.',
              'Or pass --force to delete the Pod past its budget.',
            ],
            details: { node: nodeName, pod: idOf(pod), evicted },
          },
        );
      }
      options.onLine(`[drain] ${idOf(pod)}: ${why}; asking again in ${EVICTION_RETRY_MS / 1000} s`);
      await sleep(EVICTION_RETRY_MS);
    }
  }
  // Evicted Pods may take their grace period to go.
  for (const pod of toEvict) {
    for (;;) {
      const current = await client.get<DrainPod>(podPath(pod));
      if (current === undefined || current.metadata.uid !== pod.metadata.uid) break;
      if (now() > deadline) {
        throw new DrainError(`cannot drain node ${nodeName}: ${idOf(pod)} was evicted but is still there`, {
          code: 'E_DRAIN_TIMEOUT',
          hints: ['Look at the Pod (a finalizer, a long grace period), or raise --drain-timeout.'],
          details: { node: nodeName, pod: idOf(pod) },
        });
      }
      await sleep(POD_GONE_POLL_MS);
    }
  }
  return { evicted, deletedPastBudget, skipped };
}

function parsed(body: string): { message?: string; details?: { causes?: Array<{ message?: string }> } } {
  try {
    return JSON.parse(body) as { message?: string; details?: { causes?: Array<{ message?: string }> } };
  } catch {
    return {};
  }
}

function messageOf(body: string): string {
  return parsed(body).message ?? body.slice(0, 200);
}

/** The API server's refusal with the budget's cause (which budget, how many Pods it needs). */
function budgetMessage(body: string): string {
  const status = parsed(body);
  const cause = status.details?.causes?.find((c) => c.message !== undefined)?.message;
  return [status.message, cause].filter((part) => part !== undefined).join(' ') || 'HTTP 429';
}
