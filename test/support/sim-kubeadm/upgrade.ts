/**
 * `kubeadm upgrade plan | apply | node` of the SIMULATED kubeadm (not
 * kubeadm), written from kubeadm's cmd/kubeadm/app/cmd/upgrade and
 * cmd/kubeadm/app/phases/upgrade (policy.go, staticpods.go), independently
 * of edgeadm's own skew rules, so that a test can set one against the other.
 *
 * - The versions kubeadm compares: the cluster's (the API server's
 *   `/version`), kubeadm's own (this binary's: its package's, see
 *   simExecutableScript), the kubelets' (each Node's
 *   `status.nodeInfo.kubeletVersion`).
 * - The policy (policy.go, `EnforceVersionPolicies`): mandatory, a target
 *   more than one minor above the cluster, more than one minor below it, or
 *   of a newer minor than kubeadm; skippable with `--force`, a target of a
 *   newer patch than kubeadm, a kubeadm of a newer minor than the target,
 *   and kubelets more than one minor older than the target
 *   (`MaximumAllowedMinorVersionKubeletSkew = 1`, stricter than the
 *   Kubernetes policy's three). Pre-release versions are not simulated.
 * - `upgrade plan [version]`: prints the versions and, with no version
 *   given, takes kubeadm's own as the target (real kubeadm first asks
 *   dl.k8s.io for the latest stable release; the test hosts have no route
 *   out, so the simulation never asks). Read only.
 * - `upgrade apply VERSION [-y] [-f]`: enforces the policy, backs the
 *   kube-apiserver manifest up under /etc/kubernetes/tmp/
 *   kubeadm-backup-manifests-<time>/, writes the new one (the image tag
 *   changed) under kubeadm-upgraded-manifests-<time>/ and moves it in, waits
 *   for the API server to answer `/version` with the new version (the
 *   simulated kubelet recreates the static Pod), puts the backup back when
 *   it does not (as staticpods.go rolls back), then records the version in
 *   kubeadm-config's ClusterConfiguration.
 * - `upgrade node`: on a control plane, the same manifest upgrade to the
 *   version kubeadm-config records; on a worker, "Skipping phase. Not a
 *   control plane node". The kubelet itself is upgraded by replacing its
 *   binary and restarting it, as with the real kubelet package.
 * - `--config FILE` (both): an `UpgradeConfiguration` of
 *   `kubeadm.k8s.io/v1beta4` (cmd/kubeadm/app/apis/kubeadm/v1beta4,
 *   `UpgradeApplyConfiguration`, `UpgradeNodeConfiguration`); any other
 *   apiVersion or kind is refused. Read: `apply.kubernetesVersion` (the
 *   version when none is given as the argument), `apply.forceUpgrade`,
 *   `apply.imagePullPolicy` and `node.imagePullPolicy`; `etcdUpgrade` is
 *   accepted and has nothing to act on (no etcd is simulated).
 * - The image pre-pull of the preflight phase
 *   (cmd/kubeadm/app/cmd/phases/upgrade/apply/preflight.go and
 *   .../node/preflight.go on a control plane, `RunPullImagesCheck`;
 *   cmd/kubeadm/app/preflight/checks.go, `ImagePullCheck`): with the
 *   policy `Never` nothing is pulled; with `IfNotPresent` (the default) an
 *   image containerd does not have is pulled, and with `Always` every one.
 *   The test hosts have no route out, so a pull fails, as it does (or hangs,
 *   kubernetes#132618) on an offline host: `[ERROR ImagePull]: failed to
 *   pull image …`. Which images containerd has is what the simulated `ctr
 *   images import` recorded (../sim-kubeadm/containerd.ts).
 *
 * Not simulated: etcd, controller-manager and scheduler manifests (none
 * run), certificate renewal, addons (CoreDNS, kube-proxy), image pre-pull,
 * the interactive confirmation (`-y` is accepted and implied), dry runs.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { dump as dumpYaml, load as loadYaml } from 'js-yaml';
import { call, expectOk, simReportedVersion, sleep, writeAtomically } from '../sim-node.js';
import { simImportedImageRefs } from './containerd.js';
import {
  ADMIN_CONF,
  APISERVER_MANIFEST,
  CRI_IMAGE_NAMESPACE,
  KUBERNETES_DIR,
  controlPlaneImageRefs,
  SIM_KUBERNETES_VERSION,
  KubeadmError,
  imageVersion,
  readKubeconfig,
  type KubeconfigAccess,
} from './layout.js';

/** Where kubeadm keeps its backups and staged manifests during an upgrade. */
export const KUBEADM_TMP_DIR = `${KUBERNETES_DIR}/tmp`;
/** kubeadm waits 5 min for an upgraded static Pod (UpgradeManifestTimeout); the simulation gives up sooner. */
const UPGRADE_MANIFEST_TIMEOUT_MS = 2 * 60_000;
const POLL_INTERVAL_MS = 500;

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** A parsed version, as kubeadm's version package holds it. */
export interface Semver {
  major: number;
  minor: number;
  patch: number;
  text: string;
}

/** Parses `v1.31.2` (build metadata such as `+k3s1` ignored, as kubeadm's ParseSemantic keeps it apart). */
export function parseVersion(text: string): Semver {
  const match = /^v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/.exec(text.trim());
  if (!match) throw new KubeadmError(`couldn't parse version "${text}"`);
  return { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3]), text: text.trim() };
}

function isLess(a: Semver, b: Semver): boolean {
  return a.major !== b.major ? a.major < b.major : a.minor !== b.minor ? a.minor < b.minor : a.patch < b.patch;
}

/** The versions kubeadm compares (its VersionGetter). */
export interface Versions {
  cluster: Semver;
  kubeadm: Semver;
  kubelets: Map<string, string[]>;
}

async function readVersions(admin: KubeconfigAccess): Promise<Versions> {
  const version = (await expectOk('read the cluster version', {
    ...admin,
    method: 'GET',
    url: `${admin.server}/version`,
  })) as { gitVersion?: string };
  const nodes = (await expectOk('list the Nodes', {
    ...admin,
    method: 'GET',
    url: `${admin.server}/api/v1/nodes`,
  })) as {
    items?: Array<{ metadata?: { name?: string }; status?: { nodeInfo?: { kubeletVersion?: string } } }>;
  };
  const kubelets = new Map<string, string[]>();
  for (const node of nodes.items ?? []) {
    const kubelet = node.status?.nodeInfo?.kubeletVersion ?? '';
    kubelets.set(kubelet, [...(kubelets.get(kubelet) ?? []), node.metadata?.name ?? '']);
  }
  return {
    cluster: parseVersion(version.gitVersion ?? ''),
    kubeadm: parseVersion(simReportedVersion(SIM_KUBERNETES_VERSION)),
    kubelets,
  };
}

/** policy.go's EnforceVersionPolicies, as the module comment lists it. */
export function versionPolicyErrors(versions: Versions, target: Semver): { mandatory: string[]; skippable: string[] } {
  const mandatory: string[] = [];
  const skippable: string[] = [];
  const { cluster, kubeadm } = versions;
  if (target.minor > cluster.minor + 1) {
    mandatory.push(
      `Specified version to upgrade to "${target.text}" is too high; kubeadm can upgrade only 1 minor version at a time`,
    );
  }
  if (target.minor < cluster.minor - 1) {
    mandatory.push(
      `Specified version to downgrade to "${target.text}" is too low; kubeadm can downgrade only 1 minor version at a time`,
    );
  }
  if (isLess(kubeadm, target)) {
    if (target.minor > kubeadm.minor) {
      mandatory.push(
        `Specified version to upgrade to "${target.text}" is at least one minor release higher than the kubeadm minor release (${target.minor} > ${kubeadm.minor}). Such an upgrade is not supported`,
      );
    } else {
      skippable.push(
        `Specified version to upgrade to "${target.text}" is higher than the kubeadm version "${kubeadm.text}". Upgrade kubeadm first using the tool you used to install kubeadm`,
      );
    }
  }
  if (kubeadm.major > target.major || kubeadm.minor > target.minor) {
    skippable.push(
      `Kubeadm version ${kubeadm.text} can only be used to upgrade to Kubernetes version ${kubeadm.major}.${kubeadm.minor}`,
    );
  }
  const tooOld = [...versions.kubelets.keys()].filter((kubelet) => target.minor > parseVersion(kubelet).minor + 1);
  if (tooOld.length > 0) {
    skippable.push(
      `There are kubelets in this cluster that are too old that have these versions [${tooOld.join(' ')}]`,
    );
  }
  return { mandatory, skippable };
}

function enforce(versions: Versions, target: Semver, isForced: boolean): void {
  say(`[upgrade/version] You have chosen to change the cluster version to "${target.text}"`);
  const { mandatory, skippable } = versionPolicyErrors(versions, target);
  const list = (errors: string[]): string => errors.map((error) => `\t- ${error}`).join('\n');
  if (mandatory.length > 0) {
    throw new KubeadmError(
      `[upgrade/version] FATAL: the --version argument is invalid due to these fatal errors:\n\n${list(mandatory)}\n\nPlease fix the misalignments highlighted above and try upgrading again`,
    );
  }
  if (skippable.length > 0 && !isForced) {
    throw new KubeadmError(
      `[upgrade/version] FATAL: the --version argument is invalid due to these errors:\n\n${list(skippable)}\n\nCan be bypassed if you pass the --force flag`,
    );
  }
  if (skippable.length > 0) {
    say(
      `[upgrade/version] Found ${skippable.length} potential version compatibility errors but skipping since the --force flag is set: \n\n${list(skippable)}`,
    );
  }
}

function printVersions(versions: Versions): void {
  say(`[upgrade/versions] Cluster version: ${versions.cluster.text}`);
  say(`[upgrade/versions] kubeadm version: ${versions.kubeadm.text}`);
}

/** `kubeadm upgrade plan [version]`. */
async function plan(args: string[]): Promise<void> {
  const admin = await readKubeconfig(ADMIN_CONF);
  const versions = await readVersions(admin);
  printVersions(versions);
  const given = args.find((arg) => !arg.startsWith('-'));
  if (given === undefined) {
    say('[upgrade/versions] Not asking dl.k8s.io for the latest stable version (SIMULATED kubeadm: no internet)');
  }
  const target = parseVersion(given ?? versions.kubeadm.text);
  const { mandatory, skippable } = versionPolicyErrors(versions, target);
  for (const error of [...mandatory, ...skippable]) say(`[upgrade/versions] WARNING: ${error}`);
  if (target.text === versions.cluster.text) {
    say(`[upgrade] Awesome, you're up-to-date! Enjoy!`);
    return;
  }
  say(
    "Components that must be upgraded manually after you have upgraded the control plane with 'kubeadm upgrade apply':",
  );
  say('COMPONENT   NODE   CURRENT   TARGET');
  for (const [kubelet, nodes] of versions.kubelets) {
    for (const node of nodes) say(`kubelet     ${node}   ${kubelet}   ${target.text}`);
  }
  say('Upgrade to the latest version in the series:');
  say('COMPONENT        NODE   CURRENT   TARGET');
  say(`kube-apiserver          ${versions.cluster.text}   ${target.text}`);
  say('You can now apply the upgrade by executing the following command:');
  say(`\tkubeadm upgrade apply ${target.text}`);
  if (mandatory.length > 0) throw new KubeadmError('the target version violates the version skew policy (above)');
}

function timestamp(): string {
  return new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
}

/** The manifest with its image's tag set to `version`. */
function manifestFor(text: string, version: string): string {
  const pod = loadYaml(text) as { spec?: { containers?: Array<{ image?: string }> } };
  const container = pod.spec?.containers?.[0];
  if (!container?.image) throw new KubeadmError(`${APISERVER_MANIFEST} names no image`);
  container.image = container.image.replace(/:[^:/@]+$/, '') + `:${version}`;
  return dumpYaml(pod);
}

/** What the API server at `server` reports at /version, or undefined. */
async function servedVersion(access: KubeconfigAccess, server: string): Promise<string | undefined> {
  const response = await call({ ...access, method: 'GET', url: `${server}/version` }).catch(() => undefined);
  if (response?.status !== 200) return undefined;
  return (JSON.parse(response.body) as { gitVersion?: string }).gitVersion;
}

/**
 * Whether a kube-apiserver mirror Pod carries the hash of `manifestText`:
 * kubeadm's staticpods.go waits for the mirror Pod's hash to change
 * (WaitForStaticPodHashChange) before it counts the component restarted,
 * so a caller that reads the mirror Pods after `upgrade apply` returns sees
 * the new one. The simulated kubelet puts the manifest's hash in the
 * `kubernetes.io/config.mirror` annotation (kubelet.ts).
 */
async function mirrorPodHasManifest(access: KubeconfigAccess, server: string, manifestText: string): Promise<boolean> {
  const hash = createHash('sha256').update(manifestText).digest('hex');
  const response = await call({
    ...access,
    method: 'GET',
    url: `${server}/api/v1/namespaces/kube-system/pods?labelSelector=component%3Dkube-apiserver`,
  }).catch(() => undefined);
  if (response?.status !== 200) return false;
  const pods = JSON.parse(response.body) as { items?: Array<{ metadata?: { annotations?: Record<string, string> } }> };
  return (pods.items ?? []).some((pod) => pod.metadata?.annotations?.['kubernetes.io/config.mirror'] === hash);
}

/** This control plane's own API server (the manifest's address and port). */
function localServer(manifestText: string): string {
  const pod = loadYaml(manifestText) as { spec?: { containers?: Array<{ command?: string[] }> } };
  const command = pod.spec?.containers?.[0]?.command ?? [];
  const arg = (name: string): string | undefined =>
    command.find((c) => c.startsWith(`--${name}=`))?.slice(name.length + 3);
  return `https://${arg('advertise-address') ?? '127.0.0.1'}:${arg('secure-port') ?? '6443'}`;
}

/**
 * staticpods.go's upgrade of the kube-apiserver manifest: back up, stage,
 * move in, wait for the new version, roll back on a timeout.
 */
async function upgradeStaticPod(admin: KubeconfigAccess, version: string): Promise<void> {
  const current = await readFile(APISERVER_MANIFEST, 'utf8');
  if (
    imageVersion(
      (loadYaml(current) as { spec?: { containers?: Array<{ image?: string }> } }).spec?.containers?.[0]?.image,
    ) === version
  ) {
    say(`[upgrade/staticpods] Current and new manifests of kube-apiserver are equal, skipping upgrade`);
    return;
  }
  const stamp = timestamp();
  const backupDir = join(KUBEADM_TMP_DIR, `kubeadm-backup-manifests-${stamp}`);
  const stagedDir = join(KUBEADM_TMP_DIR, `kubeadm-upgraded-manifests-${stamp}`);
  await mkdir(backupDir, { recursive: true, mode: 0o700 });
  await mkdir(stagedDir, { recursive: true, mode: 0o700 });
  const backup = join(backupDir, 'kube-apiserver.yaml');
  const staged = join(stagedDir, 'kube-apiserver.yaml');
  await writeAtomically(backup, current, 0o600);
  const upgraded = manifestFor(current, version);
  await writeAtomically(staged, upgraded, 0o600);
  say(`[upgrade/staticpods] Moving new manifest to "${APISERVER_MANIFEST}" and backing up old manifest to "${backup}"`);
  await rename(staged, APISERVER_MANIFEST);
  const server = localServer(current);
  say('[upgrade/staticpods] Waiting for the kubelet to restart the component');
  const deadline = Date.now() + UPGRADE_MANIFEST_TIMEOUT_MS;
  while ((await servedVersion(admin, server)) !== version || !(await mirrorPodHasManifest(admin, server, upgraded))) {
    if (Date.now() > deadline) {
      await writeAtomically(APISERVER_MANIFEST, current, 0o600);
      throw new KubeadmError(
        `[upgrade/apply] FATAL: couldn't upgrade control plane. kubeadm has tried to recover everything into the earlier state. the kube-apiserver did not report ${version} in time`,
      );
    }
    await sleep(POLL_INTERVAL_MS);
  }
  say(`[upgrade/staticpods] Component "kube-apiserver" upgraded successfully!`);
}

async function recordClusterVersion(admin: KubeconfigAccess, version: string): Promise<void> {
  const url = `${admin.server}/api/v1/namespaces/kube-system/configmaps/kubeadm-config`;
  const configMap = (await expectOk('read kubeadm-config', { ...admin, method: 'GET', url })) as {
    data?: Record<string, string>;
  };
  const cluster = (loadYaml(configMap.data?.ClusterConfiguration ?? '') ?? {}) as Record<string, unknown>;
  cluster.kubernetesVersion = version;
  await expectOk('upload kubeadm-config', {
    ...admin,
    method: 'PATCH',
    url,
    contentType: 'application/merge-patch+json',
    body: { data: { ClusterConfiguration: dumpYaml(cluster) } },
  });
  say('[upload-config] Storing the configuration used in ConfigMap "kubeadm-config" in the "kube-system" Namespace');
}

async function clusterConfigVersion(admin: KubeconfigAccess): Promise<string> {
  const url = `${admin.server}/api/v1/namespaces/kube-system/configmaps/kubeadm-config`;
  const configMap = (await expectOk('read kubeadm-config', { ...admin, method: 'GET', url })) as {
    data?: Record<string, string>;
  };
  const cluster = (loadYaml(configMap.data?.ClusterConfiguration ?? '') ?? {}) as { kubernetesVersion?: string };
  if (!cluster.kubernetesVersion) throw new KubeadmError('kubeadm-config has no kubernetesVersion');
  return cluster.kubernetesVersion;
}

/** What an `UpgradeConfiguration` (v1beta4) given with `--config` sets. */
interface UpgradeConfiguration {
  apply?: { kubernetesVersion?: string; forceUpgrade?: boolean; imagePullPolicy?: string; etcdUpgrade?: boolean };
  node?: { imagePullPolicy?: string; etcdUpgrade?: boolean };
}

/** The arguments without `--config FILE` (so that FILE is not taken for the version). */
function positional(args: string[]): string[] {
  return args.filter((arg, i) => !arg.startsWith('-') && args[i - 1] !== '--config');
}

async function upgradeConfiguration(args: string[]): Promise<UpgradeConfiguration> {
  const at = args.indexOf('--config');
  if (at < 0) return {};
  const path = args[at + 1];
  if (path === undefined || !existsSync(path)) throw new KubeadmError(`unable to read config from "${path ?? ''}"`);
  const doc = loadYaml(await readFile(path, 'utf8')) as { apiVersion?: string; kind?: string } & UpgradeConfiguration;
  if (doc?.apiVersion !== 'kubeadm.k8s.io/v1beta4' || doc.kind !== 'UpgradeConfiguration') {
    throw new KubeadmError(
      `${path}: expected an UpgradeConfiguration of kubeadm.k8s.io/v1beta4, found ${doc?.kind ?? '(no kind)'} of ${doc?.apiVersion ?? '(no apiVersion)'}`,
    );
  }
  for (const policy of [doc.apply?.imagePullPolicy, doc.node?.imagePullPolicy]) {
    if (policy !== undefined && !['Always', 'IfNotPresent', 'Never'].includes(policy)) {
      throw new KubeadmError(`${path}: unsupported pull policy "${policy}"`);
    }
  }
  return doc;
}

/** The preflight image pull (see the module comment): fails for any image it would have to pull. */
function pullImages(version: string, policy: string | undefined): void {
  const effective = policy ?? 'IfNotPresent';
  say('[upgrade/preflight] Pulling images required for setting up a Kubernetes cluster');
  if (effective === 'Never') return;
  const present = simImportedImageRefs(CRI_IMAGE_NAMESPACE);
  const missing = controlPlaneImageRefs(version).filter((ref) => effective === 'Always' || !present.has(ref));
  if (missing.length > 0) {
    throw new KubeadmError(
      `[preflight] Some fatal errors occurred:\n${missing
        .map(
          (ref) =>
            `\t[ERROR ImagePull]: failed to pull image ${ref}: dial tcp: lookup registry.k8s.io: no such host (SIMULATED kubeadm: the host has no route out)`,
        )
        .join(
          '\n',
        )}\n[preflight] If you know what you are doing, you can make a check non-fatal with \`--ignore-preflight-errors=...\``,
    );
  }
}

/** `kubeadm upgrade apply [VERSION] [--config FILE] [-y] [-f|--force]`. */
async function apply(args: string[]): Promise<void> {
  const config = await upgradeConfiguration(args);
  const given = positional(args)[0] ?? config.apply?.kubernetesVersion;
  if (given === undefined) throw new KubeadmError('missing one or more required arguments: the version to upgrade to');
  if (!existsSync(APISERVER_MANIFEST))
    throw new KubeadmError('this is not a control plane node: no kube-apiserver manifest');
  const admin = await readKubeconfig(ADMIN_CONF);
  const versions = await readVersions(admin);
  printVersions(versions);
  const target = parseVersion(given);
  enforce(versions, target, args.includes('-f') || args.includes('--force') || config.apply?.forceUpgrade === true);
  pullImages(target.text, config.apply?.imagePullPolicy);
  say(`[upgrade/apply] Upgrading your Static Pod-hosted control plane to version "${target.text}"...`);
  await upgradeStaticPod(admin, target.text);
  await recordClusterVersion(admin, target.text);
  say(`[upgrade/successful] SUCCESS! Your cluster was upgraded to "${target.text}". Enjoy!`);
  say(
    "[upgrade/kubelet] Now that your control plane is upgraded, please proceed with upgrading your kubelets if you haven't already done so.",
  );
}

/** `kubeadm upgrade node [--config FILE]`. */
async function node(args: string[]): Promise<void> {
  const config = await upgradeConfiguration(args);
  if (!existsSync(APISERVER_MANIFEST)) {
    say('[upgrade] Skipping phase. Not a control plane node.');
  } else {
    const admin = await readKubeconfig(ADMIN_CONF);
    say('[upgrade] Reading configuration from the "kubeadm-config" ConfigMap in namespace "kube-system"...');
    const version = await clusterConfigVersion(admin);
    const kubeadm = parseVersion(simReportedVersion(SIM_KUBERNETES_VERSION));
    if (isLess(kubeadm, parseVersion(version))) {
      throw new KubeadmError(
        `the cluster is at ${version}, newer than this kubeadm (${kubeadm.text}): upgrade kubeadm first`,
      );
    }
    pullImages(version, config.node?.imagePullPolicy);
    say(`[upgrade] Upgrading your Static Pod-hosted control plane instance to version "${version}"...`);
    await upgradeStaticPod(admin, version);
  }
  say('[upgrade] The configuration for this node was successfully updated!');
  say('[upgrade] Now you should go ahead and upgrade the kubelet package using your package manager.');
}

/** `kubeadm upgrade plan|apply|node …`. */
export async function runUpgrade(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub === 'plan') return plan(rest);
  if (sub === 'apply') return apply(rest);
  if (sub === 'node') return node(rest);
  throw new KubeadmError(
    'usage: kubeadm upgrade plan [version] | apply [VERSION] [--config FILE] [-y] [-f] | node [--config FILE]',
  );
}
