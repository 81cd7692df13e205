/**
 * edgeadm's inventory reader against Ansible's own: each generated case is
 * written to its directory, read by `ansible-inventory -i FILE --list`
 * (many per Python process, see ansible-inventory-batch.py) and by
 * edgeadm's loadInventory, and the hosts compared: name, address, port,
 * user and groups. Address, port and user are taken from Ansible's hostvars
 * the way its ssh connection plugin takes them (ansible_ssh_* first, a null
 * value skipped, the port an integer or base-10 text).
 *
 * A case where they differ is shrunk (one element left out at a time, while
 * the difference stays) and reported with its files.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadInventory } from '../../../src/fleet/inventory/load-inventory.js';
import {
  generateInventoryCase,
  renderInventoryCase,
  shrinkInventoryCase,
  type InventoryCase,
} from './ansible-inventory-cases.js';

const run = promisify(execFile);
const BATCH_SCRIPT = fileURLToPath(new URL('./ansible-inventory-batch.py', import.meta.url));

/** One host as both sides resolve it. */
export interface ResolvedInventoryHost {
  name: string;
  address: string;
  port: number | null;
  user: string | null;
  groups: string[];
}

/** What a reader made of a case: hosts, or an error. */
export type InventoryOutcome =
  { kind: 'hosts'; hosts: ResolvedInventoryHost[]; refusal?: string } | { kind: 'error'; message: string };

/** The Python that runs ansible-inventory (its shebang's), or undefined when Ansible is not installed. */
export async function ansiblePython(): Promise<string | undefined> {
  try {
    const { stdout } = await run('sh', ['-c', 'command -v ansible-inventory']);
    const first = (await readFile(stdout.trim(), 'utf8')).split('\n')[0]!;
    return /^#!\s*(\S+)/.exec(first)?.[1];
  } catch {
    return undefined;
  }
}

/** Runs ansible-inventory --list on every path in one Python process. */
export async function ansibleInventoryLists(
  python: string,
  paths: string[],
  workDir: string,
): Promise<Map<string, InventoryOutcome>> {
  const child = execFile(python, [BATCH_SCRIPT], {
    cwd: workDir,
    maxBuffer: 512 * 1024 * 1024,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: workDir,
      ANSIBLE_LOCAL_TEMP: join(workDir, '.ansible-tmp'),
      ANSIBLE_INVENTORY_UNPARSED_FAILED: 'true',
      ANSIBLE_NOCOLOR: 'true',
      LC_ALL: 'C.UTF-8',
    },
  });
  const output = new Promise<string>((resolve, reject) => {
    let text = '';
    let errors = '';
    child.stdout!.on('data', (chunk: string) => (text += chunk));
    child.stderr!.on('data', (chunk: string) => (errors += chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(text) : reject(new Error(`ansible batch exited ${code}: ${errors}`)),
    );
  });
  child.stdin!.end(JSON.stringify(paths));
  const results = JSON.parse(await output) as { path: string; list?: AnsibleList; error?: string }[];
  return new Map(
    results.map((result) => [
      result.path,
      result.list === undefined ? { kind: 'error', message: result.error ?? '' } : fromAnsibleList(result.list),
    ]),
  );
}

interface AnsibleList {
  _meta?: { hostvars?: Record<string, Record<string, unknown>> };
  [group: string]: { hosts?: string[]; children?: string[] } | undefined | AnsibleList['_meta'];
}

/** Hosts as Ansible's ssh plugin would reach them, from `--list` output. */
export function fromAnsibleList(list: AnsibleList): InventoryOutcome {
  const hostvars = list._meta?.hostvars ?? {};
  const parentsOf = new Map<string, string[]>();
  const direct = new Map<string, string[]>();
  for (const [group, body] of Object.entries(list)) {
    if (group === '_meta' || body === undefined) continue;
    const { hosts = [], children = [] } = body as { hosts?: string[]; children?: string[] };
    for (const child of children) parentsOf.set(child, [...(parentsOf.get(child) ?? []), group]);
    for (const host of hosts) direct.set(host, [...(direct.get(host) ?? []), group]);
  }
  const refusals: string[] = [];
  const hosts = [...direct.keys()].sort().map((name): ResolvedInventoryHost => {
    const groups = new Set<string>();
    const add = (group: string): void => {
      if (groups.has(group)) return;
      groups.add(group);
      for (const parent of parentsOf.get(group) ?? []) add(parent);
    };
    for (const group of direct.get(name)!) add(group);
    const vars = hostvars[name] ?? {};
    const first = (...keys: string[]): unknown =>
      keys.map((key) => vars[key]).find((value) => value !== null && value !== undefined);
    const portValue = first('ansible_ssh_port', 'ansible_port');
    let port: number | null = null;
    if (portValue !== undefined) {
      const number =
        typeof portValue === 'number'
          ? portValue
          : typeof portValue === 'string' && /^\d+$/.test(portValue)
            ? Number(portValue)
            : NaN;
      if (Number.isInteger(number) && number >= 1 && number <= 65535) port = number;
      else
        refusals.push(`host ${name}: port ${JSON.stringify(portValue)}, which Ansible's ssh plugin cannot use either`);
    }
    const address = first('ansible_ssh_host', 'ansible_host');
    const user = first('ansible_ssh_user', 'ansible_user');
    return {
      name,
      address: address === undefined ? name : String(address),
      port,
      user: user === undefined ? null : String(user),
      groups: [...groups].filter((group) => group !== 'all' && group !== 'ungrouped').sort(),
    };
  });
  if (hosts.length === 0) refusals.push('an inventory with no hosts');
  return { kind: 'hosts', hosts, ...(refusals.length > 0 ? { refusal: refusals.join('; ') } : {}) };
}

/** edgeadm's reading of the inventory at `path`. */
export async function edgeadmInventory(path: string): Promise<InventoryOutcome> {
  try {
    const inventory = await loadInventory(path);
    return {
      kind: 'hosts',
      hosts: inventory.hosts
        .map((host) => ({
          name: host.name,
          address: host.address,
          port: host.ssh.port ?? null,
          user: host.ssh.user ?? null,
          groups: [...host.groups].sort(),
        }))
        .sort((a, b) => (a.name < b.name ? -1 : 1)),
    };
  } catch (error) {
    return { kind: 'error', message: (error as Error).message };
  }
}

/** Why two outcomes differ, or undefined when they agree (a documented refusal agrees with edgeadm's error). */
export function differenceOf(ansible: InventoryOutcome, edgeadm: InventoryOutcome): string | undefined {
  if (ansible.kind === 'error') {
    return edgeadm.kind === 'error' ? undefined : `Ansible refused it (${ansible.message}), edgeadm read it`;
  }
  if (edgeadm.kind === 'error') {
    return ansible.refusal === undefined ? `edgeadm refused it (${edgeadm.message}), Ansible read it` : undefined;
  }
  if (ansible.refusal !== undefined) return `Ansible read ${ansible.refusal}; edgeadm must refuse it, and read it`;
  const expected = JSON.stringify(ansible.hosts, null, 1);
  const actual = JSON.stringify(edgeadm.hosts, null, 1);
  if (expected === actual) return undefined;
  for (const host of ansible.hosts) {
    const mine = edgeadm.hosts.find((candidate) => candidate.name === host.name);
    if (mine === undefined) return `edgeadm has no host ${host.name}`;
    if (JSON.stringify(mine) !== JSON.stringify(host))
      return `host ${host.name}: Ansible ${JSON.stringify(host)}, edgeadm ${JSON.stringify(mine)}`;
  }
  return `edgeadm has hosts Ansible does not: ${edgeadm.hosts.map((host) => host.name).join(', ')}`;
}

async function writeCase(dir: string, spec: InventoryCase): Promise<string> {
  for (const [name, text] of renderInventoryCase(spec)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), text);
  }
  return join(dir, spec.fileName);
}

/** A case that showed a difference, made as small as it goes. */
export interface InventoryFailure {
  seed: number;
  problem: string;
  /** The minimal case's files, relative path to text. */
  files: Record<string, string>;
}

export interface InventoryDifferentialReport {
  cases: number;
  hosts: number;
  /** Cases where both refused, or Ansible read what edgeadm refuses by design, by reason. */
  refusals: number;
  failures: InventoryFailure[];
}

/** Compares cases of seeds first … first+cases-1; `batch` cases share one Python process. */
export async function runInventoryDifferential(options: {
  python: string;
  first: number;
  cases: number;
  workDir: string;
  batch?: number;
  maxShrunk?: number;
}): Promise<InventoryDifferentialReport> {
  const batch = options.batch ?? 500;
  const report: InventoryDifferentialReport = { cases: 0, hosts: 0, refusals: 0, failures: [] };
  let directory = 0;
  const evaluate = async (specs: InventoryCase[], isCounted = false): Promise<(string | undefined)[]> => {
    const paths = await Promise.all(specs.map((spec) => writeCase(join(options.workDir, `c${++directory}`), spec)));
    const lists = await ansibleInventoryLists(options.python, paths, options.workDir);
    const problems: (string | undefined)[] = [];
    for (const path of paths) {
      const ansible = lists.get(path)!;
      const edgeadm = await edgeadmInventory(path);
      if (isCounted && ansible.kind === 'hosts' && edgeadm.kind === 'hosts') report.hosts += ansible.hosts.length;
      else if (isCounted) report.refusals++;
      problems.push(differenceOf(ansible, edgeadm));
    }
    return problems;
  };
  for (let start = 0; start < options.cases; start += batch) {
    const specs = Array.from({ length: Math.min(batch, options.cases - start) }, (_, index) =>
      generateInventoryCase(options.first + start + index),
    );
    const problems = await evaluate(specs, true);
    report.cases += specs.length;
    for (const [index, problem] of problems.entries()) {
      if (problem === undefined) continue;
      if (report.failures.length >= (options.maxShrunk ?? 3)) {
        report.failures.push({ seed: specs[index]!.seed, problem, files: {} });
        continue;
      }
      report.failures.push(await shrink(specs[index]!, problem, evaluate));
    }
  }
  return report;
}

async function shrink(
  spec: InventoryCase,
  problem: string,
  evaluate: (specs: InventoryCase[]) => Promise<(string | undefined)[]>,
): Promise<InventoryFailure> {
  let current = spec;
  let currentProblem = problem;
  for (let round = 0; round < 60; round++) {
    const candidates = shrinkInventoryCase(current);
    if (candidates.length === 0) break;
    const problems = await evaluate(candidates);
    const index = problems.findIndex((found) => found !== undefined);
    if (index === -1) break;
    current = candidates[index]!;
    currentProblem = problems[index]!;
  }
  return { seed: spec.seed, problem: currentProblem, files: Object.fromEntries(renderInventoryCase(current)) };
}

/** A failure as printed: the seed, the difference and every file of the minimal case. */
export function formatInventoryFailure(failure: InventoryFailure): string {
  const files = Object.entries(failure.files)
    .map(([name, text]) => `--- ${name}\n${text}`)
    .join('');
  return `seed ${failure.seed}: ${failure.problem}\n${files}`;
}
