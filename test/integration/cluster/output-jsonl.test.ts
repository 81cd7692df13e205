/**
 * `--output jsonl` through the CLI on two netns+sshd test hosts with the
 * SIMULATED k3s (test/support/sim-k3s, not k3s): init and join write one JSON
 * event per line on stdout as the phases run — every line parses, the phases
 * come in order with their host, the last line is the result — and nothing
 * else: the lines for people go to stderr, and the join token never appears.
 * `fleet reset` of both hosts names each host's events by its inventory name.
 * `--json` with `--output jsonl` is refused.
 *
 * The hosts have no systemd, so the harness asks for the direct service
 * manager explicitly (EDGEADM_SERVICE_MANAGER=direct).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InitResult } from '../../../src/cluster/init.js';
import type { JoinResult } from '../../../src/cluster/join.js';
import type { FleetResetResult } from '../../../src/fleet/fleet-reset.js';
import type { WorkflowEvent } from '../../../src/workflow/events.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import type { CliResult } from '../../support/cli.js';
import { clusterCli, sshArgs as hostSshArgs } from '../../support/cluster-cli.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { startTestHosts, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

/** A CLI run may start a simulated server and wait for it on 2 busy cores. */
const CLI_TIMEOUT_MS = 120_000;

type ResultLine<T> = { type: 'result'; time: string; ok: true; result: T };
type Line = WorkflowEvent | ResultLine<unknown> | { type: 'result'; ok: false; error: { code: string } };

let env: TestHosts;
let home: string;
let pkg: string;

beforeAll(async () => {
  ensureCliBuilt('commands/init.js', ['src', 'test/support/sim-k3s']);
  env = await startTestHosts({ count: 2 });
  home = mkdtempSync(join(env.dir, 'cli-home-'));
  pkg = (await buildSimK3sPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
}, 180_000);

afterAll(async () => {
  await env?.teardown();
});

const edgeadm = (args: string[]): Promise<CliResult> => clusterCli(home, CLI_TIMEOUT_MS)(args);

/** Every stdout line as JSON (a line that does not parse fails the test). */
function linesOf(run: CliResult): Line[] {
  const text = run.stdout.endsWith('\n') ? run.stdout.slice(0, -1) : run.stdout;
  return text.split('\n').map((line) => JSON.parse(line) as Line);
}

/** `type phase` per workflow event, in order. */
function phasesOf(lines: Line[]): string[] {
  return lines.flatMap((line) => (line.type === 'result' ? [] : [`${line.type} ${line.phase}`]));
}

let joinCommand = '';
/** init's bootstrap token, given on the command line so that join can use it: the lines never show it. */
const TOKEN = 'jsonl1.0123456789abcdef';
const TOKEN_SECRET = '0123456789abcdef';

describe('--output jsonl (simulated k3s)', () => {
  it('init writes each phase as it runs, then its result, and nothing else on stdout', async () => {
    const controlPlane = env.targets[0]!;
    const run = await edgeadm([
      'init',
      ...hostSshArgs(env, controlPlane),
      '--install-pkg-path',
      pkg,
      '--skip-kubeconfig',
      '--token',
      TOKEN,
      '--output',
      'jsonl',
    ]);
    expect(run.exitCode, printedBy(run)).toBe(0);
    const lines = linesOf(run);
    expect(phasesOf(lines)).toEqual([
      'phase-started preflight',
      'phase-finished preflight',
      'phase-started package',
      'phase-finished package',
      'phase-skipped runtime',
      'phase-skipped egress-selector',
      'phase-started control-plane',
      'phase-finished control-plane',
      'phase-started wait-ready',
      'phase-finished wait-ready',
      'phase-started bootstrap-token',
      'phase-finished bootstrap-token',
      'phase-started record-package',
      'phase-finished record-package',
      'phase-skipped upload-certs',
      'phase-skipped edge-addons',
      'phase-skipped edge-kube-proxy',
      'phase-skipped edge-autonomy',
      'phase-skipped edge-site-grids',
      'phase-skipped node-tunnel',
      'phase-started show-join-command',
      'phase-finished show-join-command',
    ]);
    for (const line of lines) {
      expect(Date.parse(line.type === 'result' ? (line as ResultLine<unknown>).time : line.time)).not.toBeNaN();
      if (line.type !== 'result') expect(line.host).toContain(controlPlane.address);
    }
    expect(lines.filter((l) => l.type === 'phase-finished').map((l) => (l as { outcome: string }).outcome)).toEqual([
      'checked',
      'done',
      'done',
      'checked',
      'done',
      // record-package
      'done',
      // Without a kubeconfig to write, the join command is only shown.
      'already-done',
    ]);
    const last = lines.at(-1) as ResultLine<InitResult>;
    expect(last).toMatchObject({ type: 'result', ok: true, result: { isChanged: true } });
    expect(last.result.phases.map((p) => p.path)).toContain('control-plane');
    joinCommand = last.result.joinCommand!;
    // The result is --json's document, redacted: the join command keeps its shape but not the token.
    expect(joinCommand).toMatch(/^edgeadm join \S+ --token <redacted> --discovery-token-ca-cert-hash sha256:/);
    expect(run.stdout).not.toContain(TOKEN_SECRET);
    // The text for people is on stderr, as without the flag.
    expect(run.stderr).toContain('[preflight] ');
    expect(run.stderr).toContain('Join edge nodes with:');
  });

  it('join writes its phases with its host, a redacted result, and no token', async () => {
    const node = env.targets[1]!;
    const words = joinCommand.split(' ');
    const run = await edgeadm([
      'join',
      words[2]!,
      '--token',
      TOKEN,
      '--discovery-token-ca-cert-hash',
      words[words.indexOf('--discovery-token-ca-cert-hash') + 1]!,
      '--install-pkg-path',
      pkg,
      ...hostSshArgs(env, node),
      '--output',
      'jsonl',
    ]);
    expect(run.exitCode, printedBy(run)).toBe(0);
    const lines = linesOf(run);
    const phases = phasesOf(lines);
    expect(phases[0]).toBe('phase-started preflight');
    expect(phases).toContain('phase-finished discovery');
    expect(phases.indexOf('phase-finished discovery')).toBeLessThan(phases.indexOf('phase-started node-join'));
    expect(lines.every((l) => l.type === 'result' || l.host.includes(node.address))).toBe(true);
    const last = lines.at(-1) as ResultLine<JoinResult>;
    expect(last).toMatchObject({ type: 'result', ok: true, result: { isChanged: true } });
    expect(run.stdout).not.toContain(TOKEN_SECRET);
  });

  it("fleet reset writes each host's phases under its inventory name, its start and end, then the report", async () => {
    const inventory = join(home, 'inventory.yaml');
    writeFileSync(
      inventory,
      [
        'kind: FleetInventory',
        'ssh:',
        '  user: root',
        `  keyFile: ${env.keys.root}`,
        'nodeGroups:',
        '  stores:',
        '    hosts:',
        ...env.targets.flatMap((target, index) => [`      store-${index + 1}:`, `        address: ${target.address}`]),
        '',
      ].join('\n'),
    );
    const run = await edgeadm([
      'fleet',
      'reset',
      '-i',
      inventory,
      '--ssh-accept-new',
      '--concurrency',
      '1',
      '--force',
      '--output',
      'jsonl',
    ]);
    expect(run.exitCode, printedBy(run)).toBe(0);
    const lines = linesOf(run) as Array<Line | { type: string; host: string }>;
    for (const store of ['store-1', 'store-2']) {
      const mine = lines.filter((line) => 'host' in line && line.host === store).map((line) => line.type);
      expect(mine[0]).toBe('host-started');
      expect(mine.at(-1)).toBe('host-done');
      expect(mine).toContain('phase-started');
      expect(mine).not.toContain('phase-failed');
    }
    const phases = phasesOf(lines.filter((line): line is WorkflowEvent => line.type.startsWith('phase-')));
    expect(phases.length).toBeGreaterThan(0);
    const last = lines.at(-1) as ResultLine<FleetResetResult>;
    expect(last).toMatchObject({ type: 'result', ok: true });
    expect(last.result.hosts.map((entry) => [entry.host, entry.status])).toEqual([
      ['store-1', 'done'],
      ['store-2', 'done'],
    ]);
    // Progress for people still goes to stderr.
    expect(run.stderr).toMatch(/store-1: started/);
  });

  it('a failure ends the lines with a failed result', async () => {
    const run = await edgeadm([
      'init',
      ...hostSshArgs(env, env.targets[0]!),
      '--install-pkg-path',
      pkg,
      '--skip-phases',
      'no-such-phase',
      '--output',
      'jsonl',
    ]);
    expect(run.exitCode).toBe(3);
    expect(linesOf(run).at(-1)).toMatchObject({ type: 'result', ok: false, error: { code: 'E_UNKNOWN_PHASE' } });
    expect(run.stderr).toContain('E_UNKNOWN_PHASE');
  });

  it('refuses --json with --output jsonl', async () => {
    const run = await edgeadm(['init', '--install-pkg-path', pkg, '--json', '--output', 'jsonl']);
    expect(run.exitCode).toBe(3);
    expect((JSON.parse(run.stdout) as { error: { code: string } }).error.code).toBe('E_FLAG_CONFLICT');
  });
});
