/**
 * The one-shot setup command some distributions need once their
 * configuration is written and their service runs (kubeadm: `kubeadm init`
 * or `kubeadm join`). It runs once per host: the install state records the
 * SHA-256 of the configuration it completed with, and a re-run says
 * "already done". Leftovers of an attempt that did not finish (a dropped
 * connection, a killed run) are cleared with the distribution's reset
 * command before the next attempt, and a failed attempt is rolled back the
 * same way, so the host is never left half set up.
 */
import { createHash } from 'node:crypto';
import { EdgeadmError } from '../errors.js';
import { execOrThrow } from '../hosts/host.js';
import { setupOf, type NodeData } from './node-context.js';

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The file whose presence shows the setup of a role completed. */
function productOf(ctx: NodeData): string {
  return ctx.role === 'control-plane' ? ctx.distribution.adminKubeconfigPath : ctx.distribution.nodeKubeconfigPath;
}

/**
 * True when the distribution's setup already completed on this host; then
 * its configuration must stay as it was (kubeadm does not reconfigure a
 * running node), and a different one is only reported.
 */
export async function isSetupDone(ctx: NodeData, configText: string): Promise<boolean> {
  if (!ctx.distribution.setupCommand) return false;
  const doneWith = ctx.state.state.setupDoneWith;
  if (doneWith === undefined || !(await ctx.host.exists(productOf(ctx), { sudo: true }))) return false;
  if (doneWith !== sha256(configText)) {
    ctx.say(
      `the ${ctx.distribution.name} configuration asked for differs from the one it was set up with; it is kept as it was (edgeadm reset, then run again, to change it)`,
    );
  }
  return true;
}

/** Runs the setup command unless `isDone` ({@link isSetupDone}); true when it ran. */
export async function runSetupOnce(ctx: NodeData, configText: string, isDone: boolean): Promise<boolean> {
  const setup = ctx.distribution.setupCommand?.(ctx.role, setupOf(ctx));
  if (!setup) return false;
  if (isDone) {
    ctx.say(`${setup.command} already ran`);
    return false;
  }
  const { host, distribution } = ctx;
  const resetCommand = distribution.resetCommand;
  if (resetCommand && !ctx.isDryRun) {
    const traces = [...(distribution.ownedFiles ?? []), distribution.caPath];
    const found: string[] = [];
    for (const path of traces) if (await host.exists(path, { sudo: true })) found.push(path);
    if (found.length > 0) {
      ctx.say(`an earlier attempt left ${found.join(', ')}: clearing it first (${resetCommand})`);
      await execOrThrow(host, resetCommand, {
        sudo: true,
        description: `clear an unfinished ${distribution.name} setup`,
      });
    }
  }
  try {
    await execOrThrow(host, setup.command, { sudo: true, timeoutMs: setup.timeoutMs, description: setup.description });
  } catch (error) {
    if (resetCommand) {
      // Roll back what the failed attempt wrote; the original error is the one that matters.
      await host.exec(resetCommand, { sudo: true, description: `roll back the failed ${distribution.name} setup` });
    }
    throw new EdgeadmError(`${setup.command} failed on ${host.name}: ${(error as Error).message}`, {
      code: 'E_DISTRIBUTION_SETUP_FAILED',
      cause: error,
      hints: [
        `What it wrote was rolled back (${resetCommand ?? 'nothing to roll back'}); fix the cause and run again.`,
        'The kubelet log on the host says more (journalctl -u kubelet, or /var/lib/edgeadm/services).',
      ],
    });
  }
  ctx.state.update((s) => ({ ...s, setupDoneWith: sha256(configText) }));
  await ctx.state.save();
  ctx.say(`${setup.command} completed`);
  return true;
}
