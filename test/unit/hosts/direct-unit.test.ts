import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  KUBELET_EDGE_DROP_IN_NAME,
  KUBELET_KUBEADM_DROP_IN,
  KUBELET_UNIT,
  renderKubeletEdgeDropIn,
} from '../../../src/cluster/distributions/kubeadm-units.js';
import { effectiveUnitOf, renderDirectLauncher } from '../../../src/hosts/direct-unit.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'direct-unit-'));
  dirs.push(dir);
  return dir;
}

describe('effectiveUnitOf', () => {
  it("applies kubeadm's kubelet drop-ins as systemd does: in name order, ExecStart= reset, later Environment= wins", () => {
    const unit = effectiveUnitOf({
      name: 'kubelet.service',
      content: KUBELET_UNIT,
      // Listed out of order on purpose: systemd applies drop-ins by name.
      dropIns: [
        { name: KUBELET_EDGE_DROP_IN_NAME, content: renderKubeletEdgeDropIn('/etc/edgeadm/kubelet-edge.kubeconfig') },
        { name: '10-kubeadm.conf', content: KUBELET_KUBEADM_DROP_IN },
      ],
    });
    expect(unit.execStart).toBe(
      '/usr/local/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS',
    );
    expect(unit.environment).toEqual({
      KUBELET_KUBECONFIG_ARGS:
        '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/edgeadm/kubelet-edge.kubeconfig',
      KUBELET_CONFIG_ARGS: '--config=/var/lib/kubelet/config.yaml',
    });
    expect(unit.environmentFiles).toEqual([
      { path: '/var/lib/kubelet/kubeadm-flags.env', isOptional: true },
      { path: '/etc/default/kubelet', isOptional: true },
    ]);
    expect(unit).toMatchObject({ restart: 'always', restartSeconds: 10 });
  });

  it('refuses a unit whose ExecStart= was reset and never set again, and Restart= values it does not know', () => {
    expect(() =>
      effectiveUnitOf({ name: 'x.service', content: '[Service]\nExecStart=/bin/true\nExecStart=\n' }),
    ).toThrow(expect.objectContaining({ code: 'E_SERVICE_UNIT_INVALID' }));
    expect(() =>
      effectiveUnitOf({ name: 'x.service', content: '[Service]\nExecStart=/bin/true\nRestart=sometimes\n' }),
    ).toThrow(expect.objectContaining({ code: 'E_SERVICE_UNIT_INVALID' }));
  });

  it('reads only the [Service] section and keeps User= and Group=', () => {
    const unit = effectiveUnitOf({
      name: 'a.service',
      content: '[Unit]\nExecStart=/not/this\n[Service]\nUser=agent\nExecStart=/bin/agent\n[Install]\nUser=nobody\n',
    });
    expect(unit).toMatchObject({ execStart: '/bin/agent', user: 'agent', group: 'agent', restart: 'no' });
  });
});

describe('renderDirectLauncher, run by /bin/sh', () => {
  it('gives the command its environment, reads environment files at every start, splits $NAME into words, and restarts it', () => {
    const dir = scratch();
    const record = join(dir, 'record');
    const count = join(dir, 'count');
    // A program that records its arguments and environment, then exits 1 twice and 0 the third time.
    writeFileSync(
      join(dir, 'program'),
      [
        '#!/bin/sh',
        `n=$(cat ${count} 2>/dev/null || echo 0); n=$((n+1)); echo $n > ${count}`,
        `printf '%s|' "$#" "$@" "$FROM_UNIT" "$FROM_FILE" >> ${record}; echo >> ${record}`,
        // The environment file changes between starts, as kubeadm writes kubeadm-flags.env after the first.
        `echo 'FROM_FILE="second start" ARGS_FROM_FILE="--c=3"' > ${join(dir, 'env')}`,
        '[ $n -ge 3 ] && exit 0; exit 1',
      ].join('\n'),
      { mode: 0o755 },
    );
    writeFileSync(join(dir, 'env'), 'FROM_FILE="first start"\nARGS_FROM_FILE="--b=2"\n');
    const unit = effectiveUnitOf({
      name: 'p.service',
      content: `[Service]\nEnvironment="ARGS=--a=1 --z=9" FROM_UNIT=unit\nEnvironmentFile=-${join(dir, 'env')}\nEnvironmentFile=-${join(dir, 'missing')}\nExecStart=${join(dir, 'program')} $ARGS $ARGS_FROM_FILE\nRestart=on-failure\nRestartSec=10ms\n`,
    });
    writeFileSync(join(dir, 'launcher'), renderDirectLauncher('p.service', unit));
    execFileSync('/bin/sh', [join(dir, 'launcher')], { stdio: 'ignore', timeout: 30_000 });
    expect(readFileSync(record, 'utf8').trim().split('\n')).toEqual([
      '3|--a=1|--z=9|--b=2|unit|first start|',
      '3|--a=1|--z=9|--c=3|unit|second start|',
      '3|--a=1|--z=9|--c=3|unit|second start|',
    ]);
  });

  it('stops at the first exit when the unit does not ask for restarts, and fails on a missing required environment file', () => {
    const dir = scratch();
    const once = effectiveUnitOf({
      name: 'o.service',
      content: `[Service]\nExecStart=/bin/sh -c 'echo ran >> ${join(dir, 'ran')}; exit 3'\n`,
    });
    writeFileSync(join(dir, 'once'), renderDirectLauncher('o.service', once));
    expect(() => execFileSync('/bin/sh', [join(dir, 'once')], { stdio: 'ignore', timeout: 30_000 })).toThrow();
    expect(readFileSync(join(dir, 'ran'), 'utf8')).toBe('ran\n');
    const needsFile = effectiveUnitOf({
      name: 'n.service',
      content: `[Service]\nEnvironmentFile=${join(dir, 'absent')}\nExecStart=/bin/sh -c 'echo ran >> ${join(dir, 'ran2')}'\n`,
    });
    writeFileSync(join(dir, 'needs'), renderDirectLauncher('n.service', needsFile));
    expect(() => execFileSync('/bin/sh', [join(dir, 'needs')], { stdio: 'ignore', timeout: 30_000 })).toThrow();
  });
});
