/**
 * Autonomy duration: how long the pods on an edge node tolerate the node
 * being cut off from the control plane before they are evicted — as pure
 * functions (the policy; `autonomy-controller.ts` applies it).
 *
 * Kubernetes evicts the pods of a node that stops heartbeating: after the
 * grace period (40 s) the node lifecycle controller taints it
 * `node.kubernetes.io/unreachable:NoExecute` (`not-ready` when the kubelet
 * says NotReady), and the taint eviction controller deletes every pod whose
 * matching toleration has run out. The DefaultTolerationSeconds admission
 * plugin gives pods 300 s. An edge site that loses its uplink for five
 * minutes therefore has its pods deleted, and recreated when the link
 * returns (KubeEdge #3941, #4048, #4429; SuperEdge #28).
 *
 * What edgeadm does (the choice and why, see src/edge/README.md,
 * "Autonomy duration"): each edge node carries the annotation
 * {@link AUTONOMY_DURATION_ANNOTATION} (`join --autonomy-duration`, the
 * cluster's default from `init --autonomy-duration`), and a controller on
 * the control plane sets the `tolerationSeconds` of the unreachable and
 * not-ready NoExecute tolerations of every pod bound to such a node to
 * that duration (none, for `0`: tolerate for ever). A cut shorter than the
 * duration leaves the pods where they are; a node gone for longer is still
 * evicted by Kubernetes itself. This is OpenYurt's
 * `node.openyurt.io/autonomy-duration` (proposal 20240929, PR #2211, its
 * pod-binding controller), done without replacing any Kubernetes
 * controller.
 */
import { ValidationError } from '../errors.js';
import { formatGoDuration, parseGoDuration } from '../trust/duration.js';

/** The Node annotation that holds a node's autonomy duration (a Go duration; `0` = never evict). */
export const AUTONOMY_DURATION_ANNOTATION = 'edgeadm.io/autonomy-duration';
/**
 * The default: a day. Long enough to ride out the outages edge sites
 * really have (an uplink down overnight) without a single pod moving; short
 * enough that a node that really died has its pods rescheduled the next
 * day. `0` never evicts (the workloads of a site often cannot run anywhere
 * else anyway); a few minutes suits workloads that should fail over.
 */
export const DEFAULT_AUTONOMY_DURATION = '24h';
/** The taints Kubernetes' node lifecycle controller puts on a node it stops hearing from. */
export const NODE_UNREACHABLE_TAINT = 'node.kubernetes.io/unreachable';
export const NODE_NOT_READY_TAINT = 'node.kubernetes.io/not-ready';
/** The pod annotation a static pod's mirror carries (k8s.io/api core/v1 `MirrorPodAnnotationKey`). */
const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';
const MS_PER_SECOND = 1000;

/** How long pods tolerate a cut-off node: a number of seconds, or for ever. */
export type AutonomyDuration = { kind: 'seconds'; seconds: number } | { kind: 'forever' };

/**
 * Parses `--autonomy-duration` (a Go duration such as `24h`, `30m`; `0`
 * means never evict). Whole seconds only: it becomes `tolerationSeconds`.
 *
 * @throws {ValidationError} `E_DURATION_INVALID`.
 */
export function parseAutonomyDuration(text: string, what = '--autonomy-duration'): AutonomyDuration {
  let ms: number;
  try {
    ms = parseGoDuration(text);
  } catch (error) {
    throw new ValidationError(`invalid ${what}: ${(error as Error).message}`, {
      code: 'E_DURATION_INVALID',
      hints: (error as ValidationError).hints,
    });
  }
  if (ms < 0 || !Number.isSafeInteger(ms / MS_PER_SECOND) || ms % MS_PER_SECOND !== 0) {
    throw new ValidationError(
      `invalid ${what} ${JSON.stringify(text)}: it must be a whole number of seconds, not negative (0 = never evict)`,
      {
        code: 'E_DURATION_INVALID',
        hints: [`For example ${DEFAULT_AUTONOMY_DURATION} (the default), 30m, 72h, or 0 to never evict.`],
      },
    );
  }
  return ms === 0 ? { kind: 'forever' } : { kind: 'seconds', seconds: ms / MS_PER_SECOND };
}

/** The annotation value for a duration (Go form, `0` for ever). Pure. */
export function formatAutonomyDuration(duration: AutonomyDuration): string {
  return duration.kind === 'forever' ? '0' : formatGoDuration(duration.seconds * MS_PER_SECOND);
}

/** A pod's toleration as the API holds it. */
export interface PodToleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

/** The parts of a pod the policy reads. */
export interface PodLike {
  metadata: {
    name: string;
    namespace?: string;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ kind?: string; controller?: boolean }>;
    deletionTimestamp?: string;
  };
  spec?: { nodeName?: string; tolerations?: PodToleration[] };
}

/**
 * Whether the policy leaves a pod alone: DaemonSet pods (their controller
 * already gives them these tolerations for ever), mirror pods of static
 * pods (the kubelet owns them), and pods being deleted.
 */
export function isPodExempt(pod: PodLike): boolean {
  if (pod.metadata.deletionTimestamp !== undefined) return true;
  if (pod.metadata.annotations?.[MIRROR_POD_ANNOTATION] !== undefined) return true;
  return (pod.metadata.ownerReferences ?? []).some((owner) => owner.kind === 'DaemonSet');
}

/** Whether a toleration names the taint `key` (NoExecute, no value) and tolerates it. */
function isNodeLifecycleToleration(toleration: PodToleration, key: string): boolean {
  const isValueMatched = toleration.operator === 'Exists' || !toleration.value;
  return toleration.key === key && isValueMatched && (toleration.effect === 'NoExecute' || !toleration.effect);
}

/**
 * The tolerations a pod bound to an edge node must have, or undefined
 * when it already has them (or is exempt). Pure.
 *
 * Every toleration of `unreachable` or `not-ready` NoExecute with a
 * `tolerationSeconds` gets the duration's seconds (or none, for ever); one
 * already for ever stays so. A pod with no such toleration (an API server
 * without the DefaultTolerationSeconds plugin) gets one added. They are
 * put first in the list. Nothing else changes: the API server refuses any
 * other change to an existing toleration, and allows additions, new
 * seconds and another order.
 */
export function autonomyTolerations(pod: PodLike, duration: AutonomyDuration): PodToleration[] | undefined {
  if (isPodExempt(pod)) return undefined;
  const current = pod.spec?.tolerations ?? [];
  const isOurs = (toleration: PodToleration): boolean =>
    [NODE_UNREACHABLE_TAINT, NODE_NOT_READY_TAINT].some((key) => isNodeLifecycleToleration(toleration, key));
  const ours = current.filter(isOurs).map((toleration) => {
    if (toleration.tolerationSeconds === undefined || toleration.tolerationSeconds === null) return toleration;
    if (duration.kind === 'forever') {
      const { tolerationSeconds: _dropped, ...forever } = toleration;
      return forever;
    }
    return { ...toleration, tolerationSeconds: duration.seconds };
  });
  for (const key of [NODE_NOT_READY_TAINT, NODE_UNREACHABLE_TAINT]) {
    if (ours.some((toleration) => isNodeLifecycleToleration(toleration, key))) continue;
    ours.push({
      key,
      operator: 'Exists',
      effect: 'NoExecute',
      ...(duration.kind === 'seconds' ? { tolerationSeconds: duration.seconds } : {}),
    });
  }
  // Kubernetes takes the first toleration that matches a taint (GetMatchingTolerations):
  // these go first, so that a wildcard toleration (empty key) with its own seconds cannot
  // decide instead. The API server accepts any order (it checks that each toleration is kept).
  const next = [...ours, ...current.filter((toleration) => !isOurs(toleration))];
  return JSON.stringify(next) === JSON.stringify(current) ? undefined : next;
}

/**
 * A node's autonomy duration from its annotation; undefined when it has
 * none, or one that does not parse (the node is then left to Kubernetes'
 * defaults). Pure.
 */
export function nodeAutonomyDuration(annotations: Record<string, string> | undefined): AutonomyDuration | undefined {
  const text = annotations?.[AUTONOMY_DURATION_ANNOTATION];
  if (text === undefined) return undefined;
  try {
    return parseAutonomyDuration(text, `annotation ${AUTONOMY_DURATION_ANNOTATION}`);
  } catch {
    return undefined;
  }
}
