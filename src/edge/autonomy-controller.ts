/**
 * The autonomy controller (`edgeadm agent autonomy`, a service on the
 * control plane that `init --enable-edge` installs): applies the policy of
 * `autonomy.ts` to the cluster. Each pass lists the edge nodes (label
 * `edgeadm.io/edge=true`) with their autonomy duration annotation, lists
 * the pods, and patches the tolerations of every pod bound to such a node
 * that does not have them yet. The patch carries the pod's
 * resourceVersion, so a pod changed in between is left for the next pass.
 *
 * It must act while the node is still online: Kubernetes' taint eviction
 * keeps an eviction it already scheduled even when the tolerations grow
 * afterwards. A pod bound within one interval of its node losing the link,
 * or while this controller is down, keeps Kubernetes' 300 s. Nothing else
 * depends on it: pods are created, scheduled and run without it (unlike an
 * admission webhook, whose failure policy would have to choose between
 * blocking pods and letting them through unmodified).
 */
import { corePath, type KubeClient, type KubeObject } from '../kube/client.js';
import { autonomyTolerations, nodeAutonomyDuration, type AutonomyDuration, type PodLike } from './autonomy.js';

/** The label edge nodes carry (src/cluster/edge-settings.ts writes it). */
const EDGE_NODE_SELECTOR = 'edgeadm.io/edge=true';

/** What one pass did. */
export interface AutonomyPassResult {
  /** Edge nodes with a valid duration. */
  nodes: number;
  /** Pods whose tolerations were patched. */
  patched: string[];
  /** Pods whose patch failed (conflict, gone): retried next pass. */
  failed: string[];
}

/**
 * One reconcile pass: every pod on an edge node gets the tolerations its
 * node's duration asks for.
 */
export async function reconcileAutonomy(client: KubeClient): Promise<AutonomyPassResult> {
  const nodes = await client.list<KubeObject>(corePath('nodes'), { labelSelector: EDGE_NODE_SELECTOR });
  const durations = new Map<string, AutonomyDuration>();
  for (const node of nodes) {
    const duration = nodeAutonomyDuration(node.metadata?.annotations);
    const name = node.metadata?.name;
    if (duration !== undefined && name !== undefined) durations.set(name, duration);
  }
  const result: AutonomyPassResult = { nodes: durations.size, patched: [], failed: [] };
  if (durations.size === 0) return result;
  const pods = await client.list<KubeObject & PodLike>(corePath('pods'));
  for (const pod of pods) {
    const duration = durations.get(pod.spec?.nodeName ?? '');
    if (duration === undefined) continue;
    const tolerations = autonomyTolerations(pod, duration);
    if (tolerations === undefined) continue;
    const name = `${pod.metadata.namespace ?? ''}/${pod.metadata.name}`;
    try {
      await client.mergePatch(corePath('pods', { namespace: pod.metadata.namespace ?? '', name: pod.metadata.name }), {
        metadata: { resourceVersion: pod.metadata.resourceVersion },
        spec: { tolerations },
      });
      result.patched.push(name);
    } catch {
      result.failed.push(name);
    }
  }
  return result;
}

/** How the controller runs: its client, pace and what stops it. */
export interface AutonomyControllerOptions {
  client: KubeClient;
  intervalMs: number;
  /** Stops the loop (SIGTERM). */
  signal: AbortSignal;
  log: (line: string) => void;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** Runs passes every `intervalMs` until the signal aborts; a failed pass is logged and retried. */
export async function runAutonomyController(options: AutonomyControllerOptions): Promise<void> {
  const sleep = options.sleep ?? abortableSleep;
  while (!options.signal.aborted) {
    try {
      const pass = await reconcileAutonomy(options.client);
      if (pass.patched.length > 0) options.log(`set the autonomy tolerations of ${pass.patched.join(', ')}`);
      if (pass.failed.length > 0) options.log(`will retry ${pass.failed.join(', ')} (changed or gone meanwhile)`);
    } catch (error) {
      options.log(`pass failed, retrying: ${(error as Error).message}`);
    }
    await sleep(options.intervalMs, options.signal);
  }
}
