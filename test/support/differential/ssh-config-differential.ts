/**
 * edgeadm's ssh config resolution against OpenSSH's own: each generated
 * configuration is resolved for a few typed hosts by `ssh -G -F FILE HOST`
 * (user, host name, port, ProxyJump), by `ssh -v` with a ProxyCommand that
 * ends at once (the key files ssh loads, tokens expanded), and by edgeadm's
 * resolveSshChain. The jump chain is rebuilt the way ssh runs it: for
 * `ProxyJump a,b` the last hop b is resolved as `ssh -G -J a b`, and the
 * first hop with its own ProxyJump. A case that differs is shrunk and
 * printed.
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { hostname, userInfo } from 'node:os';
import { join } from 'node:path';
import { resolveSshChain } from '../../../src/hosts/connect.js';
import { sshConfigEnvironment } from '../../../src/hosts/ssh-config-files.js';
import { DEFAULT_IDENTITY_FILES } from '../../../src/hosts/ssh-config.js';
import {
  generateSshConfigCase,
  renderSshConfigCase,
  shrinkSshConfigCase,
  type SshConfigCase,
} from './ssh-config-cases.js';

interface HopView {
  user: string;
  host: string;
  port: number;
}

/** What one side made of one typed host. */
export type SshOutcome =
  | { kind: 'resolved'; target: HopView & { keys: string[] | 'defaults' }; jumps: HopView[]; refusal?: string }
  | { kind: 'error'; message: string };

/** The most jump hosts followed before the chain is taken for a loop (edgeadm's MAX_JUMP_HOPS). */
const MAX_HOPS = 8;

function runSsh(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'ssh',
      args,
      { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LC_ALL: 'C' }, timeout: 10_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 255;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

async function sshG(config: string, args: string[]): Promise<Map<string, string[]> | string> {
  const { code, stdout, stderr } = await runSsh(['-G', '-F', config, ...args]);
  if (code !== 0) return stderr.replace(/Pseudo-terminal[^\n]*\n/g, '').trim() || `ssh -G exited ${code}`;
  const values = new Map<string, string[]>();
  for (const line of stdout.split('\n')) {
    const space = line.indexOf(' ');
    if (space === -1) continue;
    const key = line.slice(0, space);
    values.set(key, [...(values.get(key) ?? []), line.slice(space + 1)]);
  }
  return values;
}

/** The key files `ssh -v` loads (certificates left out), in order. */
async function loadedKeys(config: string, typed: string): Promise<string[]> {
  const { stderr } = await runSsh(['-v', '-F', config, '-o', 'ProxyCommand=true', '-o', 'BatchMode=yes', typed]);
  return [...stderr.matchAll(/^debug1: identity file (.*) type -?\d+$/gm)]
    .map((match) => match[1]!)
    .filter((file) => !file.endsWith('-cert'));
}

const DEFAULT_RAW = DEFAULT_IDENTITY_FILES.map((name) => `~/.ssh/${name}`);

/** A ProxyJump entry as ssh -G prints it: brackets around a numeric host are the printer's, not the host's. */
function jumpParts(spec: string): { user?: string; host: string; port?: number } {
  const match = /^(?:(.*)@)?(\[[^\]]*\]|[^:]+)(?::(\d+))?$/.exec(spec)!;
  return {
    ...(match[1] === undefined ? {} : { user: match[1] }),
    host: match[2]!.replace(/^\[(.*)\]$/, '$1'),
    ...(match[3] === undefined ? {} : { port: Number(match[3]) }),
  };
}

function jumpList(values: Map<string, string[]>): string[] {
  const jump = values.get('proxyjump')?.[0];
  return jump === undefined || jump === 'none' ? [] : jump.split(',');
}

function proxyCommandOf(values: Map<string, string[]>): string | undefined {
  const command = values.get('proxycommand')?.[0];
  return command === undefined || command === 'none' ? undefined : command;
}

/** OpenSSH's resolution of `typed` through `config`. */
export async function opensshOutcome(config: string, typed: string): Promise<SshOutcome> {
  const values = await sshG(config, [typed]);
  if (typeof values === 'string') return { kind: 'error', message: values };
  const refusals: string[] = [];
  if (proxyCommandOf(values) !== undefined) refusals.push('ProxyCommand');
  const raw = values.get('identityfile') ?? [];
  // ssh -G prints key files before expansion: ask ssh -v which it loads when a token or ~ is there to expand.
  const keys =
    JSON.stringify(raw) === JSON.stringify(DEFAULT_RAW)
      ? ('defaults' as const)
      : raw.some((file) => file.includes('%') || file.startsWith('~'))
        ? await loadedKeys(config, typed)
        : raw.filter((file) => file.toLowerCase() !== 'none');
  let hops = 0;
  const chainThrough = async (list: string[]): Promise<HopView[] | string> => {
    if (list.length === 0) return [];
    if (++hops > MAX_HOPS) {
      refusals.push('a ProxyJump loop');
      return [];
    }
    const before = list.slice(0, -1);
    const hop = jumpParts(list.at(-1)!);
    const args = [
      ...(hop.user === undefined ? [] : ['-l', hop.user]),
      ...(hop.port === undefined ? [] : ['-p', String(hop.port)]),
      ...(before.length === 0 ? [] : ['-J', before.join(',')]),
      hop.host,
    ];
    const hopValues = await sshG(config, args);
    if (typeof hopValues === 'string') return hopValues;
    if (before.length === 0 && proxyCommandOf(hopValues) !== undefined) refusals.push('ProxyCommand on a jump host');
    const earlier = await chainThrough(before.length === 0 ? jumpList(hopValues) : before);
    if (typeof earlier === 'string') return earlier;
    return [
      ...earlier,
      {
        user: hopValues.get('user')![0]!,
        host: hopValues.get('hostname')![0]!,
        port: Number(hopValues.get('port')![0]),
      },
    ];
  };
  const jumps = await chainThrough(jumpList(values));
  if (typeof jumps === 'string') return { kind: 'error', message: jumps };
  return {
    kind: 'resolved',
    target: {
      user: values.get('user')![0]!,
      host: values.get('hostname')![0]!,
      port: Number(values.get('port')![0]),
      keys,
    },
    jumps,
    ...(refusals.length > 0 ? { refusal: refusals.join(', ') } : {}),
  };
}

const LOCAL = userInfo();
const ENVIRONMENT = sshConfigEnvironment({
  homeDir: LOCAL.homedir,
  localUser: LOCAL.username,
  localUid: LOCAL.uid,
  localHostName: hostname(),
});

/** edgeadm's resolution of `typed` through `config`. */
export function edgeadmSshOutcome(config: string, typed: string): SshOutcome {
  try {
    const chain = resolveSshChain({ host: typed }, config, ENVIRONMENT);
    return {
      kind: 'resolved',
      target: { ...chain.target.endpoint, keys: chain.target.usesDefaultKeys ? 'defaults' : chain.target.keyFiles },
      jumps: chain.jumps.map((hop) => hop.endpoint),
    };
  } catch (error) {
    return { kind: 'error', message: `${(error as { code?: string }).code ?? ''} ${(error as Error).message}` };
  }
}

/** Why two outcomes differ, or undefined (a documented refusal agrees with edgeadm's error). */
export function sshDifference(openssh: SshOutcome, edgeadm: SshOutcome): string | undefined {
  if (openssh.kind === 'error') {
    return edgeadm.kind === 'error' ? undefined : `ssh refused it (${openssh.message}), edgeadm resolved it`;
  }
  if (openssh.refusal !== undefined) {
    return edgeadm.kind === 'error' ? undefined : `edgeadm must refuse ${openssh.refusal}, and resolved it`;
  }
  if (edgeadm.kind === 'error') return `edgeadm refused it (${edgeadm.message}), ssh resolved it`;
  const expected = JSON.stringify({ target: openssh.target, jumps: openssh.jumps });
  const actual = JSON.stringify({ target: edgeadm.target, jumps: edgeadm.jumps });
  return expected === actual ? undefined : `ssh ${expected}\n  edgeadm ${actual}`;
}

export interface SshFailure {
  seed: number;
  problem: string;
  files: Record<string, string>;
  queries: string[];
}

export interface SshDifferentialReport {
  cases: number;
  lookups: number;
  refusals: number;
  failures: SshFailure[];
}

/** Compares the cases of seeds first … first+cases-1, `parallel` at a time. */
export async function runSshConfigDifferential(options: {
  first: number;
  cases: number;
  workDir: string;
  parallel?: number;
  maxShrunk?: number;
}): Promise<SshDifferentialReport> {
  const report: SshDifferentialReport = { cases: 0, lookups: 0, refusals: 0, failures: [] };
  let directory = 0;
  const evaluate = async (spec: SshConfigCase, isCounted: boolean): Promise<string | undefined> => {
    const dir = join(options.workDir, `s${++directory}`);
    await mkdir(dir, { recursive: true });
    for (const [name, text] of renderSshConfigCase(spec, dir)) await writeFile(join(dir, name), text);
    const config = join(dir, 'config');
    for (const typed of spec.queries) {
      const openssh = await opensshOutcome(config, typed);
      const edgeadm = edgeadmSshOutcome(config, typed);
      if (isCounted) {
        report.lookups++;
        if (openssh.kind === 'error' || openssh.refusal !== undefined) report.refusals++;
      }
      const problem = sshDifference(openssh, edgeadm);
      if (problem !== undefined) return `${typed}: ${problem}`;
    }
    return undefined;
  };
  const seeds = Array.from({ length: options.cases }, (_, index) => options.first + index);
  const failing: { spec: SshConfigCase; problem: string }[] = [];
  const worker = async (): Promise<void> => {
    for (let seed = seeds.shift(); seed !== undefined; seed = seeds.shift()) {
      const spec = generateSshConfigCase(seed);
      const problem = await evaluate(spec, true);
      report.cases++;
      if (problem !== undefined) failing.push({ spec, problem });
    }
  };
  await Promise.all(Array.from({ length: options.parallel ?? 3 }, worker));
  failing.sort((a, b) => a.spec.seed - b.spec.seed);
  for (const [index, { spec, problem }] of failing.entries()) {
    if (index >= (options.maxShrunk ?? 3)) {
      report.failures.push({ seed: spec.seed, problem, files: {}, queries: spec.queries });
      continue;
    }
    let current = spec;
    let currentProblem = problem;
    for (let round = 0; round < 80; round++) {
      let isSmaller = false;
      for (const candidate of shrinkSshConfigCase(current)) {
        const found = await evaluate(candidate, false);
        if (found !== undefined) {
          current = candidate;
          currentProblem = found;
          isSmaller = true;
          break;
        }
      }
      if (!isSmaller) break;
    }
    report.failures.push({
      seed: spec.seed,
      problem: currentProblem,
      files: Object.fromEntries(renderSshConfigCase(current, '$DIR')),
      queries: current.queries,
    });
  }
  return report;
}

/** A failure as printed: seed, typed hosts, difference and files. */
export function formatSshFailure(failure: SshFailure): string {
  const files = Object.entries(failure.files)
    .map(([name, text]) => `--- ${name}\n${text}`)
    .join('');
  return `seed ${failure.seed} (hosts ${failure.queries.join(' ')}): ${failure.problem}\n${files}`;
}
