/**
 * The real rig's refusal to run under a chroot (test/support/real/rig.ts):
 * there runc's exec joins a container's mount namespace at the machine's
 * root, and `kubectl exec` runs outside the pod (scripts/fresh-root.sh
 * once did this). The same small root is entered with chroot, where the
 * rig must say why it cannot run, and with pivot_root, as a machine's root
 * is, where it must not.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../../support/cli.js';

const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;

/** Prints chrootReason() of a Node started with `enter` (chroot or pivot_root) in a root of binds of /usr and the repository. */
async function reasonWhenEnteredWith(enter: 'chroot' | 'pivot_root', root: string): Promise<string> {
  const node = `${process.execPath} --import ${join(REPO_ROOT, 'bench/support/register-ts.js')} --input-type=module -e "const { chrootReason } = await import('${join(REPO_ROOT, 'test/support/real/rig.ts')}'); console.log(chrootReason() ?? 'none')"`;
  const script = [
    'set -eu',
    `R=${root}`,
    'mount -t tmpfs tmpfs $R',
    'mkdir -p $R/usr $R/proc $R/dev $R/tmp && mount --bind /usr $R/usr && mount -t proc proc $R/proc && mount --rbind /dev $R/dev',
    'for d in bin sbin lib lib64; do if [ -L /$d ]; then ln -s "$(readlink /$d)" $R/$d; elif [ -d /$d ]; then mkdir $R/$d && mount --bind /$d $R/$d; fi; done',
    `mkdir -p $R${REPO_ROOT} && mount --bind ${REPO_ROOT} $R${REPO_ROOT}`,
    enter === 'chroot'
      ? `exec chroot $R sh -c ${JSON.stringify(node)}`
      : `cd $R && exec unshare -m --propagation private sh -c ${JSON.stringify(`pivot_root . . && umount -l / && cd / && ${node}`)}`,
  ].join('\n');
  const { stdout } = await run('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script]);
  return stdout.trim();
}

describe.skipIf(!isRoot)('the real rig under a chroot', () => {
  const dir = mkdtempSync(join(tmpdir(), 'edgeadm-rig-root-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses to run there, saying why and how to enter the root instead', async () => {
    expect(await reasonWhenEnteredWith('chroot', dir)).toMatch(/runs under a chroot.*pivot_root/);
  });

  it('runs in a root entered with pivot_root, as on a machine', async () => {
    expect(await reasonWhenEnteredWith('pivot_root', dir)).toBe('none');
  });
});
