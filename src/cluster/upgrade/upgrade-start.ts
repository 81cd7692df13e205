/**
 * Where an `upgrade apply` begins: the unfinished upgrade an interrupted run
 * left on the host (resumed only with the same package), or a new one the
 * Kubernetes version skew policy allows.
 */
import { EdgeadmError, PreflightError, ValidationError } from '../../errors.js';
import type { Host } from '../../hosts/host.js';
import { clusterVersionsOf } from './cluster-versions.js';
import type { KubeVersion } from './kube-version.js';
import { hintsFor, readCluster } from './plan.js';
import { checkUpgrade } from './skew.js';
import { isUnfinished, readUpgradeState, type UpgradeState } from './upgrade-state.js';

/** The upgrade to run, and the step an earlier run had reached when it is resumed. */
export interface UpgradeStart {
  /** `step: 'done'` when the host runs the target already (nothing to do). */
  upgrade: UpgradeState;
  resumedFrom?: UpgradeState['step'];
}

/**
 * The upgrade of `real` to `target` with the package `packageName`: the
 * unfinished one recorded on the host, or a new one.
 *
 * @throws {EdgeadmError} `E_UPGRADE_IN_PROGRESS` when another package's upgrade is unfinished.
 * @throws {PreflightError} `E_UPGRADE_SKEW`.
 * @throws {ValidationError} `E_UPGRADE_NOT_CONTROL_PLANE`.
 */
export async function upgradeToRun(
  real: Host,
  target: KubeVersion,
  packageName: string,
  onLine: (line: string) => void,
): Promise<UpgradeStart> {
  const saved = await readUpgradeState(real);
  if (saved === undefined || !isUnfinished(saved.step)) return { upgrade: await newUpgrade(real, target, packageName) };
  if (saved.to !== target.text || saved.package !== packageName) {
    throw new EdgeadmError(
      `an upgrade of ${real.name} to ${saved.to} (${saved.package}) is unfinished (step ${saved.step}); run it again with that package to finish it or roll it back`,
      { code: 'E_UPGRADE_IN_PROGRESS' },
    );
  }
  onLine(`[upgrade] resuming the upgrade ${saved.from} -> ${saved.to} from step "${saved.step}"`);
  return { upgrade: saved, resumedFrom: saved.step };
}

/**
 * The state of a new upgrade of `real` to `target`, once the skew policy
 * allows it (a refusal changes nothing); `step: 'done'` when the host runs
 * the target already.
 *
 * @throws {PreflightError} `E_UPGRADE_SKEW`.
 * @throws {ValidationError} `E_UPGRADE_NOT_CONTROL_PLANE`.
 */
async function newUpgrade(real: Host, target: KubeVersion, packageName: string): Promise<UpgradeState> {
  const snapshot = await readCluster(real);
  const verdict = checkUpgrade(clusterVersionsOf(snapshot), target);
  if (!verdict.isAllowed) {
    throw new PreflightError(
      `the upgrade to ${target.text} breaks the Kubernetes version skew policy:\n${verdict.violations.map((v) => `  - ${v.message}`).join('\n')}`,
      { code: 'E_UPGRADE_SKEW', hints: hintsFor(verdict) },
    );
  }
  const facts = await real.facts();
  const me = snapshot.hosts.find((h) => h.name === facts.hostname && h.role === 'control-plane');
  if (me === undefined) {
    throw new ValidationError(`${real.name} is not a control plane of the cluster it serves`, {
      code: 'E_UPGRADE_NOT_CONTROL_PLANE',
    });
  }
  const from = (me.apiServer ?? me.kubelet).text;
  const isDone = from === target.text && me.kubelet.text === target.text;
  return {
    version: 1,
    step: isDone ? 'done' : 'backing-up',
    from,
    to: target.text,
    package: packageName,
    nodeName: me.name,
    ...(snapshot.isHa ? { isHa: true } : {}),
  };
}
