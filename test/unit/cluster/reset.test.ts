/** Reset removes what upgrades left on the host (newcomer point 28). */
import { describe, expect, it } from 'vitest';
import { UPGRADE_STATE_DIR, afterReset, resetPhases, type ResetData } from '../../../src/cluster/reset.js';
import { emptyState } from '../../../src/cluster/state.js';
import { UPGRADE_DIR } from '../../../src/cluster/upgrade/upgrade-state.js';
import { DryRunHost } from '../../../src/hosts/dry-run-host.js';

function removeFiles(state = emptyState()): Promise<{ removed: string[]; plan: string[] }> {
  const host = new DryRunHost({ name: 'local' });
  const ctx = { host, isDryRun: true, state, removed: [] as string[], say: () => undefined } as unknown as ResetData;
  const phase = resetPhases().find((p) => p.name === 'remove-files')!;
  return phase.run!(ctx).then(() => ({ removed: ctx.removed, plan: host.renderPlan() }));
}

describe('reset remove-files', () => {
  it('is the directory the upgrade workflows write', () => {
    expect(UPGRADE_STATE_DIR).toBe(UPGRADE_DIR);
  });

  it('removes the upgrade state and backup, which the install state does not record, and --dry-run lists it', async () => {
    const { removed, plan } = await removeFiles({ ...emptyState(), files: ['/usr/local/bin/k3s'] });
    expect(removed).toEqual(['/usr/local/bin/k3s', UPGRADE_DIR]);
    expect(plan.join('\n')).toContain(`remove ${UPGRADE_DIR}`);
  });

  it('removes it itself when the recorded directory holding it is shared (the tunnel agent lives there too)', async () => {
    const { removed, plan } = await removeFiles({ ...emptyState(), directories: ['/var/lib/edgeadm'] });
    expect(removed).toEqual([UPGRADE_DIR]);
    expect(plan.join('\n')).not.toMatch(/rm -rf '\/var\/lib\/edgeadm'/);
  });
});

describe('reset and the directories it shares with what it did not install', () => {
  it('removes the direct service manager directory and its parents only once empty, never whole', async () => {
    const host = new DryRunHost({ name: 'local' });
    const directories = ['/var/lib/edgeadm', '/var/lib/edgeadm/services', '/var/lib/edgeadm/state', '/var/lib/rancher'];
    const ctx = {
      host,
      isDryRun: true,
      state: { ...emptyState(), directories },
      removed: [] as string[],
      say: () => undefined,
    } as unknown as ResetData;
    for (const name of ['remove-files', 'remove-state']) await resetPhases().find((p) => p.name === name)!.run!(ctx);
    // Removed whole: what only init made. The shared ones (the tunnel agent keeps its launcher, pid file and data
    // there) are each an rmdir, deepest first, after everything of init's in them is gone.
    expect(ctx.removed).toEqual([
      '/var/lib/rancher',
      UPGRADE_DIR,
      '/var/lib/edgeadm/state/install.json',
      '/var/lib/edgeadm/state',
    ]);
    const plan = host.renderPlan();
    expect(plan.slice(-2)).toEqual([
      "[5] Would run: rmdir '/var/lib/edgeadm/services' 2>/dev/null && echo removed || true (as root)",
      "[6] Would run: rmdir '/var/lib/edgeadm' 2>/dev/null && echo removed || true (as root)",
    ]);
  });
});

describe('after a reset (newcomer point 6)', () => {
  const reset = { host: 'root@10.1.0.1:22', isDryRun: false, hadState: true, phases: [], removed: [] };

  it('says that a worker’s Node object stays in the cluster, and how to delete it before joining again', () => {
    expect(afterReset({ ...reset, role: 'worker' }).join(' ')).toContain('kubectl delete node NAME');
    expect(afterReset({ ...reset, role: 'control-plane' })).toEqual([]);
    expect(afterReset({ ...reset, role: 'worker', isDryRun: true })).toEqual([]);
  });
});
