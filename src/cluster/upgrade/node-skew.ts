/**
 * The version skew rules for one node's new kubelet (`upgrade node`): the
 * cluster-wide policy of skew.ts, applied to the cluster as it would be
 * with only that node upgraded. Pure.
 */
import { clusterVersionsOf, type ClusterSnapshot } from './cluster-versions.js';
import { minorOf, minorsAhead, type KubeVersion } from './kube-version.js';
import { SKEW_RULES, applyStep, skewViolations, type SkewRule } from './skew.js';

/**
 * The skew rules the node's new kubelet would break: newer than an API
 * server, further behind than allowed, or a minor downgrade. Pure.
 */
export function nodeSkewViolations(
  snapshot: ClusterSnapshot,
  nodeName: string,
  target: KubeVersion,
): Array<{ rule: SkewRule; message: string }> {
  const node = snapshot.hosts.find((h) => h.name === nodeName);
  const violations: Array<{ rule: SkewRule; message: string }> = [];
  if (node !== undefined && minorsAhead(target, node.kubelet) < 0) {
    violations.push({
      rule: 'no-minor-downgrade',
      message: `${nodeName} would go from ${node.kubelet.text} back to ${minorOf(target)}: ${SKEW_RULES['no-minor-downgrade']} (no-minor-downgrade)`,
    });
  }
  const after = applyStep(clusterVersionsOf(snapshot), { host: nodeName, role: 'node', to: target });
  for (const violation of skewViolations(after)) {
    if (violation.host === nodeName) violations.push({ rule: violation.rule, message: violation.message });
  }
  return violations;
}
