/**
 * The record, in the cluster, of the install package it was installed or
 * last upgraded from (health/installed-package.ts): written by `init` once
 * the API server answers, and by `upgrade apply` once its health gates
 * passed. The cluster's agent reports it to the hub, which shows which
 * package, by manifest digest and signer, each cluster runs.
 */
import {
  INSTALLED_PACKAGE_NAME,
  INSTALLED_PACKAGE_NAMESPACE,
  INSTALLED_PACKAGE_PATH,
  installedPackageObject,
} from '../health/installed-package.js';
import type { InstalledPackageView } from '../health/wire.js';
import type { KubeClient, KubeObject } from '../kube/client.js';
import type { ResolvedPackage } from '../packages/source.js';
import type { Phase } from '../workflow/phase.js';

/** What is recorded of `pkg`, installed by `action` at `at`. Pure. */
export function installedPackageOfResolved(
  pkg: ResolvedPackage,
  action: InstalledPackageView['action'],
  at: Date,
): InstalledPackageView {
  return {
    name: pkg.manifest.name,
    version: pkg.manifest.kubernetesVersion,
    distribution: pkg.manifest.distribution,
    manifestSha256: pkg.manifestSha256,
    ...(pkg.signer.isChecked ? { signer: pkg.signer.fingerprint } : {}),
    action,
    at: at.toISOString(),
  };
}

/**
 * Writes the record unless it already names this package (same manifest,
 * signer and step): a re-run changes nothing, and keeps the first time.
 */
export async function recordInstalledPackage(
  client: KubeClient,
  installed: InstalledPackageView,
): Promise<'changed' | 'unchanged'> {
  const existing = await client.get<KubeObject & { data?: Record<string, string> }>(INSTALLED_PACKAGE_PATH);
  const data = existing?.data;
  if (
    data?.manifestSha256 === installed.manifestSha256 &&
    data.action === installed.action &&
    data.signer === installed.signer
  ) {
    return 'unchanged';
  }
  await client.apply(INSTALLED_PACKAGE_PATH, installedPackageObject(installed), { force: true });
  return 'changed';
}

/** What the phase needs of a workflow: its verified package, a way to speak, dry run. */
export interface PackageRecordData {
  package: ResolvedPackage;
  isDryRun: boolean;
  say(line: string): void;
}

/** The phase that writes the record, with `client` for the cluster's API server. */
export function packageRecordPhase<C extends PackageRecordData>(deps: {
  action: InstalledPackageView['action'];
  client: (ctx: C) => Promise<KubeClient>;
  now?: () => Date;
}): Phase<C> {
  return {
    name: 'record-package',
    summary: `Record in the cluster which package it runs (ConfigMap ${INSTALLED_PACKAGE_NAMESPACE}/${INSTALLED_PACKAGE_NAME})`,
    async run(ctx) {
      const where = `${INSTALLED_PACKAGE_NAMESPACE}/${INSTALLED_PACKAGE_NAME}`;
      if (ctx.isDryRun) {
        ctx.say(`Would record package ${ctx.package.manifest.name} in ConfigMap ${where}`);
        return 'unchanged';
      }
      const installed = installedPackageOfResolved(ctx.package, deps.action, (deps.now ?? (() => new Date()))());
      const outcome = await recordInstalledPackage(await deps.client(ctx), installed);
      ctx.say(
        `${outcome === 'changed' ? 'recorded' : 'already recorded'} package ${installed.name} (manifest sha256:${installed.manifestSha256.slice(0, 12)}…) in ConfigMap ${where}`,
      );
      return outcome;
    },
  };
}
