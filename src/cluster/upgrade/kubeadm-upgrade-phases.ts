/**
 * `upgrade apply`'s phases for a kubeadm control plane, in kubeadm's order
 * (kubeadm first, then `kubeadm upgrade apply|node`, then the kubelet, so
 * that no kubelet is ever newer than its API server), with no network
 * beyond SSH:
 *
 * - images: the package's image archives are imported into containerd
 *   (`ctr -n k8s.io images import`), as init imports them, before kubeadm
 *   runs; kubeadm is told never to pull (`imagePullPolicy: Never` in an
 *   `UpgradeConfiguration`, kubeadm.k8s.io/v1beta4), so an offline host
 *   never waits on a registry (kubernetes#132618);
 * - backup: the kubeadm, kubelet and kubectl binaries, /etc/kubernetes's
 *   manifests, pki and kubeconfigs, the kubelet's config.yaml and
 *   kubeadm-flags.env, and the stacked etcd's data directory, archived with
 *   the static Pods stopped (their manifests moved aside, which makes the
 *   kubelet stop them: a data directory copied under a running etcd is not
 *   a snapshot), each file's SHA-256 in the backup's manifest. kubeadm keeps
 *   its own backups under /etc/kubernetes/tmp as well;
 * - the first control plane to move runs `kubeadm upgrade apply vX`, every
 *   other one `kubeadm upgrade node` (kubeadm's rule: apply once per
 *   cluster, which records the version in kubeadm-config, node on the
 *   others). Which one this host is comes from kubeadm-config;
 * - rollback: the static Pods stopped, the kubelet stopped, the backed-up
 *   binaries, files and (on a single control plane) etcd data put back, the
 *   kubelet started. In an HA control plane the etcd data is not restored:
 *   one member's data restored alone would not rejoin its peers, and the
 *   others hold the cluster's state; what `kubeadm upgrade apply` rewrote
 *   cluster-wide (kubeadm-config, kubelet-config, the addons) is put back
 *   from a copy kept before it ran (kubeadm-cluster-objects.ts).
 */
import { execOrThrow, type Host } from '../../hosts/host.js';
import { EdgeadmError } from '../../errors.js';
import type { Phase } from '../../workflow/phase.js';
import { KUBEADM_API_VERSION, KUBEADM_BIN } from '../distributions/kubeadm.js';
import { hostPackagePaths, stagePackage } from '../package-phase.js';
import { installVerified } from '../verified-install.js';
import { SYSTEM_TOOLS, sha256OfFile } from '../../hosts/system-tools.js';
import { apiReadyGate, nodeReadyGate } from './health-gates.js';
import {
  CLUSTER_OBJECTS_BACKUP,
  keepApplyWrittenObjects,
  kubeadmAdminClient,
  restoreApplyWrittenObjects,
} from './kubeadm-cluster-objects.js';
import {
  BACKUP_TIMEOUT_MS,
  IMAGE_IMPORT_TIMEOUT_MS,
  KUBEADM_UPGRADE_TIMEOUT_MS,
  STATIC_POD_STOP_TIMEOUT_MS,
} from './limits.js';
import {
  diskSpacePreflight,
  gateTarget,
  isPastBackup,
  packageBinaryInstall,
  packageFileSha256,
  setStep,
  shellQuote,
  type UpgradeApplyData,
} from './upgrade-steps.js';
import { UPGRADE_BACKUP_DIR, UPGRADE_DIR } from './upgrade-state.js';
import {
  backupHashesScript,
  backupRestoreInstall,
  checkBackup,
  parseBackupHashes,
  privateBackupDirScript,
  restoreHashes,
} from './backup-hashes.js';

/** The binaries an upgrade replaces, those the package carries. */
export const KUBEADM_UPGRADED_BINARIES = ['kubeadm', 'kubelet', 'kubectl'] as const;
/** What kubeadm keeps under /etc/kubernetes that an upgrade changes (manifests, renewed certificates, kubeconfigs). */
const KUBERNETES_DIR = '/etc/kubernetes';
const MANIFESTS_DIR = `${KUBERNETES_DIR}/manifests`;
/** Where the static Pod manifests wait while their Pods are stopped (same file system: a rename). */
export const STOPPED_MANIFESTS_DIR = `${KUBERNETES_DIR}/edgeadm-stopped-manifests`;
const KUBELET_DIR = '/var/lib/kubelet';
/** Stacked etcd's data directory. */
export const ETCD_DATA_DIR = '/var/lib/etcd';
/** The UpgradeConfiguration edgeadm gives kubeadm. */
export const KUBEADM_UPGRADE_CONFIG_PATH = `${UPGRADE_DIR}/kubeadm-upgrade.yaml`;
/** The ports that answer while the static Pods run: etcd's client port and the API server's. */
const ETCD_CLIENT_PORT = 2379;

function binPath(ctx: UpgradeApplyData, name: string): string {
  return `${ctx.distribution.binDir}/${name}`;
}

/** The binaries of {@link KUBEADM_UPGRADED_BINARIES} the package has. */
function packageBinaries(ctx: UpgradeApplyData): string[] {
  return KUBEADM_UPGRADED_BINARIES.filter((name) => packageFileSha256(ctx, `bin/${name}`) !== undefined);
}

function requireBinary(ctx: UpgradeApplyData, name: string): string {
  const sha256 = packageFileSha256(ctx, `bin/${name}`);
  if (sha256 === undefined) {
    throw new EdgeadmError(`the install package ${ctx.package.manifest.name} has no bin/${name}`, {
      code: 'E_PACKAGE_INCOMPLETE',
      exitCode: 3,
    });
  }
  return sha256;
}

/** Puts manifests moved aside back (a run cut while the static Pods were stopped leaves them there). */
function restoreStoppedManifestsScript(): string {
  const s = STOPPED_MANIFESTS_DIR;
  const t = SYSTEM_TOOLS;
  return `if [ -d ${s} ]; then for f in ${s}/*; do if [ -e "$f" ]; then ${t.mv} -f "$f" ${MANIFESTS_DIR}/; fi; done; ${t.rmdir} ${s}; fi`;
}

/**
 * Moves the static Pod manifests aside and waits until nothing answers on the
 * API server's port (its address from the manifest) or etcd's, and until no
 * etcd process is left in the host's network namespace (stacked etcd runs with
 * the host's network): etcd closes its client port at SIGTERM and goes on
 * writing its WAL for a moment, so a closed port alone does not mean its data
 * directory is still, and the backup archives that directory next. Processes
 * of other network namespaces are left out (a test host shares the machine's
 * process table; a real host has only its own).
 */
function stopStaticPodsScript(): string {
  const s = STOPPED_MANIFESTS_DIR;
  const tries = Math.ceil(STATIC_POD_STOP_TIMEOUT_MS / 100);
  return [
    `${SYSTEM_TOOLS.mkdir} -p -m 700 ${s}`,
    `for f in ${MANIFESTS_DIR}/*; do if [ -e "$f" ]; then ${SYSTEM_TOOLS.mv} -f "$f" ${s}/; fi; done`,
    `addr=$(grep -ho -- '--advertise-address=[^" ]*' ${s}/kube-apiserver.yaml 2>/dev/null | head -n 1 | cut -d= -f2)`,
    'addr=${addr:-127.0.0.1}',
    'i=0',
    'own_net=$(readlink /proc/self/ns/net)',
    // One read per process, by the shell itself; readlink only for an etcd.
    `etcd_runs() { for p in /proc/[0-9]*; do c=; read -r c 2>/dev/null <"$p/comm"; if [ "$c" = etcd ] && [ "$(readlink "$p/ns/net" 2>/dev/null)" = "$own_net" ]; then return 0; fi; done; return 1; }`,
    `while bash -c "exec 3<>/dev/tcp/$addr/6443" 2>/dev/null || bash -c 'exec 3<>/dev/tcp/127.0.0.1/${ETCD_CLIENT_PORT}' 2>/dev/null || etcd_runs; do`,
    `  i=$((i+1)); if [ $i -gt ${tries} ]; then echo 'the static Pods did not stop within ${STATIC_POD_STOP_TIMEOUT_MS / 1000} s of their manifests being moved aside' >&2; exit 1; fi`,
    '  sleep 0.1',
    'done',
  ].join('\n');
}

/**
 * This control plane's own kube-apiserver (`https://<advertise-address>:<secure-port>`
 * from its static Pod manifest, or from where a cut run left it aside): an
 * HA control plane's admin.conf names the shared controlPlaneEndpoint,
 * and the gates must ask the API server this upgrade replaced.
 */
export async function kubeadmLocalApiServer(host: Host): Promise<string | undefined> {
  const result = await host.exec(
    `cat ${MANIFESTS_DIR}/kube-apiserver.yaml 2>/dev/null || cat ${STOPPED_MANIFESTS_DIR}/kube-apiserver.yaml`,
    { sudo: true, readOnly: true },
  );
  if (result.exitCode !== 0 || result.dryRun === true) return undefined;
  const address = /--advertise-address=([^\s"']+)/.exec(result.stdout)?.[1];
  const port = /--secure-port=(\d+)/.exec(result.stdout)?.[1] ?? '6443';
  if (address === undefined) return undefined;
  return `https://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/** The upgrade's UpgradeConfiguration: kubeadm's own pull never runs (the images come from the package). */
export function renderKubeadmUpgradeConfig(version: string): string {
  return [
    '# Written by edgeadm upgrade apply: the images come from the install package, none is pulled.',
    `apiVersion: ${KUBEADM_API_VERSION}`,
    'kind: UpgradeConfiguration',
    'apply:',
    `  kubernetesVersion: ${version}`,
    '  imagePullPolicy: Never',
    'node:',
    '  imagePullPolicy: Never',
    '',
  ].join('\n');
}

/** The version kubeadm-config records (what `kubeadm upgrade apply` last moved the cluster to). */
async function clusterConfigVersion(ctx: UpgradeApplyData): Promise<string | undefined> {
  const client = await kubeadmAdminClient(ctx.host, ctx.distribution);
  try {
    const configMap = await client.request<{ data?: Record<string, string> }>(
      'GET',
      '/api/v1/namespaces/kube-system/configmaps/kubeadm-config',
    );
    return /^kubernetesVersion:\s*(\S+)\s*$/m.exec(configMap.data?.ClusterConfiguration ?? '')?.[1];
  } finally {
    client.close();
  }
}

function kubeletUnit(ctx: UpgradeApplyData): ReturnType<UpgradeApplyData['distribution']['serviceUnit']> {
  return ctx.distribution.serviceUnit('control-plane');
}

function imagesPhase(): Phase<UpgradeApplyData> {
  return {
    name: 'images',
    summary: "Import the package's images into containerd (kubeadm is told never to pull)",
    async run(ctx) {
      const runtime = ctx.distribution.runtime;
      const images = ctx.package.manifest.files.filter((f) => /^images\/[^/]+\.tar$/.test(f.path));
      if (runtime === undefined || images.length === 0) return 'unchanged';
      const { dir } = hostPackagePaths(ctx.package.manifest.name);
      for (const image of images) {
        const command = runtime.imageImportCommand(`${dir}/${image.path}`);
        await execOrThrow(ctx.host, command, {
          sudo: true,
          timeoutMs: IMAGE_IMPORT_TIMEOUT_MS,
          description: `import ${image.path} into ${runtime.name} (${command})`,
        });
      }
      ctx.say(`imported ${images.length} image archive(s)`);
      return 'changed';
    },
  };
}

function backupPhase(): Phase<UpgradeApplyData> {
  return {
    name: 'backup',
    summary:
      'Back up kubeadm, the kubelet and kubectl, the static Pod manifests, pki and kubeconfigs, the kubelet configuration and the etcd data (its Pods stopped)',
    runIf: (ctx) => !isPastBackup(ctx),
    skipReason: () => 'the backup is already complete',
    async run(ctx) {
      await setStep(ctx, 'backing-up');
      const partial = `${UPGRADE_BACKUP_DIR}.partial`;
      const t = SYSTEM_TOOLS;
      const binaries = KUBEADM_UPGRADED_BINARIES.map(
        (name) =>
          `if [ -f ${shellQuote(binPath(ctx, name))} ]; then ${t.cp} -p ${shellQuote(binPath(ctx, name))} ${partial}/bin/${name}; fi`,
      );
      const backup = await execOrThrow(
        ctx.host,
        [
          'set -e',
          restoreStoppedManifestsScript(),
          `${t.rm} -rf ${partial}`,
          privateBackupDirScript([UPGRADE_DIR, partial, `${partial}/bin`]),
          ...binaries,
          `cd ${KUBERNETES_DIR} && ${t.tar} -cf ${partial}/kubernetes.tar $(ls -d manifests pki *.conf 2>/dev/null)`,
          `cd ${KUBELET_DIR} && ${t.tar} -cf ${partial}/kubelet.tar $(ls -d config.yaml kubeadm-flags.env 2>/dev/null)`,
          // The datastore: with etcd (and the API server) stopped, its data directory is a consistent snapshot.
          stopStaticPodsScript(),
          `${t.tar} -C ${ETCD_DATA_DIR} -cf ${partial}/etcd.tar .`,
          restoreStoppedManifestsScript(),
          backupHashesScript(partial, 'bin/* kubernetes.tar kubelet.tar etcd.tar'),
          `${t.sync} ${partial}/* ${partial}/bin/*`,
          `${t.rm} -rf ${UPGRADE_BACKUP_DIR}`,
          `${t.mv} ${partial} ${UPGRADE_BACKUP_DIR}`,
          `${t.sync} ${UPGRADE_DIR}`,
        ].join('\n'),
        {
          sudo: true,
          timeoutMs: BACKUP_TIMEOUT_MS + STATIC_POD_STOP_TIMEOUT_MS,
          description: `back up the kubeadm control plane (binaries, ${KUBERNETES_DIR}, ${KUBELET_DIR} configuration, ${ETCD_DATA_DIR}) into ${UPGRADE_BACKUP_DIR}`,
        },
      );
      ctx.upgrade = { ...ctx.upgrade, backupSha256: parseBackupHashes(backup.stdout) };
      await setStep(ctx, 'backed-up');
      ctx.say(`backed up ${ctx.upgrade.from} into ${UPGRADE_BACKUP_DIR}`);
      return 'changed';
    },
  };
}

/**
 * Installs each of `names` from the package atomically, unless it is already
 * the package's, through the one install primitive: a staged copy that is not
 * the manifest's bytes is refused before it replaces the binary that runs
 * next as root (`kubeadm upgrade apply`).
 */
async function swapBinaries(ctx: UpgradeApplyData, names: string[]): Promise<boolean> {
  const { installed } = await installVerified(
    ctx.host,
    names.map((name) => packageBinaryInstall(ctx.package, name, binPath(ctx, name))),
    {
      description: `install ${names.map((name) => binPath(ctx, name)).join(', ')} from ${ctx.package.manifest.name}, atomically, each checked`,
    },
  );
  return installed.length > 0;
}

function kubeadmSwapPhase(): Phase<UpgradeApplyData> {
  return {
    name: 'swap-kubeadm',
    summary: "Install the package's kubeadm (and kubectl) atomically",
    async run(ctx) {
      const names = packageBinaries(ctx).filter((name) => name !== 'kubelet');
      return (await swapBinaries(ctx, names)) ? 'changed' : 'unchanged';
    },
  };
}

function controlPlanePhase(): Phase<UpgradeApplyData> {
  return {
    name: 'control-plane',
    summary:
      'kubeadm upgrade apply on the first control plane to move, kubeadm upgrade node on the others (no image pull)',
    async run(ctx) {
      const config = renderKubeadmUpgradeConfig(ctx.upgrade.to);
      await ctx.host.put(Buffer.from(config), KUBEADM_UPGRADE_CONFIG_PATH, {
        mode: 0o600,
        sudo: true,
        description: `write the kubeadm UpgradeConfiguration (imagePullPolicy: Never) to ${KUBEADM_UPGRADE_CONFIG_PATH}`,
      });
      let command = `${KUBEADM_BIN} upgrade apply ${ctx.upgrade.to} --config ${KUBEADM_UPGRADE_CONFIG_PATH} --yes`;
      if (!ctx.isDryRun) {
        // The API server answers (the backup restarted it) before kubeadm asks it anything.
        await apiReadyGate({
          ...gateTarget(ctx, ctx.upgrade.from),
          acceptVersions: [ctx.upgrade.from, ctx.upgrade.to],
        });
        if ((await clusterConfigVersion(ctx)) === ctx.upgrade.to) {
          command = `${KUBEADM_BIN} upgrade node --config ${KUBEADM_UPGRADE_CONFIG_PATH}`;
        } else if (ctx.upgrade.isHa === true && (await keepApplyWrittenObjects(ctx.host, ctx.distribution))) {
          // The HA datastore is not restored by a rollback: what apply rewrites cluster-wide is kept apart.
          ctx.say(`kept the cluster objects kubeadm upgrade apply rewrites in ${CLUSTER_OBJECTS_BACKUP}`);
        }
      }
      await execOrThrow(ctx.host, command, {
        sudo: true,
        timeoutMs: KUBEADM_UPGRADE_TIMEOUT_MS,
        description: `upgrade the control plane's static Pods (${command})`,
      });
      ctx.say(command.includes(' upgrade node ') ? 'kubeadm upgrade node' : `kubeadm upgrade apply ${ctx.upgrade.to}`);
      return 'changed';
    },
  };
}

function kubeletPhase(): Phase<UpgradeApplyData> {
  return {
    name: 'kubelet',
    summary: "Stop the kubelet, install the package's kubelet atomically, start it",
    async run(ctx) {
      const unit = kubeletUnit(ctx);
      requireBinary(ctx, 'kubelet');
      const target = binPath(ctx, 'kubelet');
      const sha256 = requireBinary(ctx, 'kubelet');
      const current = await ctx.host.exec(sha256OfFile(shellQuote(target)), {
        sudo: true,
        readOnly: true,
      });
      const isSwapped = current.exitCode === 0 && current.stdout.trim() === sha256;
      if (!isSwapped) {
        await ctx.serviceManager.stop(ctx.host, unit.name);
        await swapBinaries(ctx, ['kubelet']);
      }
      await setStep(ctx, 'swapped');
      await ctx.serviceManager.ensureRunning(ctx.host, unit, { isRestartNeeded: !isSwapped });
      return isSwapped ? 'unchanged' : 'changed';
    },
  };
}

/** The kubeadm upgrade phases before the health gates. */
export function kubeadmUpgradePhases(): Phase<UpgradeApplyData>[] {
  return [
    diskSpacePreflight({
      backupPaths: [KUBERNETES_DIR, ETCD_DATA_DIR, ...KUBEADM_UPGRADED_BINARIES.map((n) => `/usr/local/bin/${n}`)],
      binaries: ['kubeadm', 'kubelet'],
    }),
    {
      name: 'package',
      summary: 'Upload the new install package, unpack it and check it against its manifest on the host',
      async run(ctx) {
        return (await stagePackage(ctx)) ? 'changed' : 'unchanged';
      },
    },
    imagesPhase(),
    backupPhase(),
    kubeadmSwapPhase(),
    controlPlanePhase(),
    kubeletPhase(),
  ];
}

/** The kubeadm rollback: the backup restored with the static Pods and the kubelet stopped, the old version started. */
export function kubeadmRollbackPhase(): Phase<UpgradeApplyData> {
  return {
    name: 'rollback',
    summary:
      'Restore the backed-up binaries, manifests, pki, kubeconfigs, kubelet configuration and etcd data; start the kubelet',
    async run(ctx) {
      await setStep(ctx, 'rolling-back');
      const backup = UPGRADE_BACKUP_DIR;
      await checkBackup(ctx.host, backup, ctx.upgrade.backupSha256);
      const hashes = await restoreHashes(ctx.host, backup, ctx.upgrade.backupSha256);
      await execOrThrow(ctx.host, ['set -e', stopStaticPodsScript()].join('\n'), {
        sudo: true,
        timeoutMs: STATIC_POD_STOP_TIMEOUT_MS + 60_000,
        description: 'stop the static Pods',
      });
      const unit = kubeletUnit(ctx);
      await ctx.serviceManager.stop(ctx.host, unit.name);
      const restoring = `${KUBERNETES_DIR}/.edgeadm-restore`;
      // Each binary the backup holds, checked against the hashes recorded when it was taken.
      await installVerified(
        ctx.host,
        KUBEADM_UPGRADED_BINARIES.map((name) =>
          backupRestoreInstall(backup, `bin/${name}`, binPath(ctx, name), 0o755, hashes),
        ).filter((install) => install !== undefined),
        { description: `restore the binaries from ${backup}, checked` },
      );
      await execOrThrow(
        ctx.host,
        [
          'set -e',
          `${SYSTEM_TOOLS.rm} -rf ${restoring} && ${SYSTEM_TOOLS.mkdir} -m 700 ${restoring}`,
          `${SYSTEM_TOOLS.tar} -C ${restoring} -xpf ${backup}/kubernetes.tar`,
          `for e in $(${SYSTEM_TOOLS.ls} -A ${restoring}); do ${SYSTEM_TOOLS.rm} -rf ${KUBERNETES_DIR}/"$e"; ${SYSTEM_TOOLS.mv} ${restoring}/"$e" ${KUBERNETES_DIR}/"$e"; done`,
          `${SYSTEM_TOOLS.rmdir} ${restoring}`,
          `${SYSTEM_TOOLS.rm} -rf ${STOPPED_MANIFESTS_DIR}`,
          `${SYSTEM_TOOLS.tar} -C ${KUBELET_DIR} -xpf ${backup}/kubelet.tar`,
          ...(ctx.upgrade.isHa === true
            ? []
            : [
                `${SYSTEM_TOOLS.find} ${ETCD_DATA_DIR} -mindepth 1 -maxdepth 1 -exec ${SYSTEM_TOOLS.rm} -rf {} +`,
                `${SYSTEM_TOOLS.tar} -C ${ETCD_DATA_DIR} -xpf ${backup}/etcd.tar`,
              ]),
          SYSTEM_TOOLS.sync,
        ].join('\n'),
        {
          sudo: true,
          timeoutMs: BACKUP_TIMEOUT_MS,
          description: `restore ${KUBERNETES_DIR}, the kubelet configuration${ctx.upgrade.isHa === true ? '' : ` and ${ETCD_DATA_DIR}`} from ${backup}`,
        },
      );
      await ctx.serviceManager.ensureRunning(ctx.host, unit, { isRestartNeeded: true });
      ctx.say(`restored ${ctx.upgrade.from} from ${backup}; started the kubelet`);
      if (ctx.upgrade.isHa === true) {
        // Once this control plane answers at the old version again, the cluster records that version again.
        await apiReadyGate(gateTarget(ctx, ctx.upgrade.from));
        const restored = await restoreApplyWrittenObjects(ctx.host, ctx.distribution);
        if (restored > 0) ctx.say(`put back ${restored} cluster objects kubeadm upgrade apply had rewritten`);
      }
      return 'changed';
    },
  };
}

/**
 * After a failure during the backup (nothing replaced yet): the static Pods'
 * manifests back in place and the kubelet running, the old version answering.
 */
export async function kubeadmAbandonBackup(ctx: UpgradeApplyData): Promise<void> {
  await execOrThrow(ctx.host, restoreStoppedManifestsScript(), {
    sudo: true,
    description: 'put the static Pod manifests back',
  });
  await ctx.serviceManager.ensureRunning(ctx.host, kubeletUnit(ctx), { isRestartNeeded: false });
  await apiReadyGate(gateTarget(ctx, ctx.upgrade.from));
  await nodeReadyGate(gateTarget(ctx, ctx.upgrade.from));
}
