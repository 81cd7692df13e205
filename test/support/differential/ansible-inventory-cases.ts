/**
 * Seeded generator of Ansible inventories for the differential suite: YAML
 * and INI files with groups, children (some defined inline), host patterns
 * with ranges and ports, host variables written in several groups, YAML
 * merge keys, ansible_group_priority, ansible_ssh_* beside the plain names,
 * YAML 1.1 and Python literal values, and group_vars/ and host_vars/ files in
 * every form Ansible reads. A case is data ({@link InventoryCase}), rendered
 * to files by {@link renderInventoryCase}, and made smaller by
 * {@link shrinkInventoryCase} when it shows a difference.
 */
import { seededRandom, type SeededRandom } from './seeded-random.js';

/** A value as written in each format (INI text is one shell word, valid on a host line and in [g:vars]). */
export interface VarText {
  yaml: string;
  ini: string;
}

export interface VarSpec {
  key: string;
  value: VarText;
}

export interface HostEntry {
  pattern: string;
  vars: VarSpec[];
  /** YAML: this mapping is anchored as &a<anchor>. */
  anchor?: number;
  /** YAML: merge `<<: *a<merge>` at this position among the vars (when that anchor is already written). */
  merge?: { anchor: number; at: number };
}

export type Section =
  | { kind: 'vars'; vars: VarSpec[]; anchor?: number; merge?: { anchor: number; at: number } }
  | { kind: 'hosts'; hosts: HostEntry[] }
  | { kind: 'children'; children: { name: string; inline?: GroupSpec }[] };

export interface GroupSpec {
  name: string;
  /** INI: write an empty [name] first, so that :vars and :children sections name a defined group. */
  isDeclared?: boolean;
  sections: Section[];
}

export interface VarsFileSpec {
  dir: 'group_vars' | 'host_vars';
  name: string;
  /** '' for NAME, an extension, 'dir' for NAME/ with two files, 'both' for NAME and NAME.yml (Ansible reads NAME only). */
  form: '' | '.yml' | '.yaml' | '.json' | 'dir' | 'both';
  vars: VarSpec[];
  more: VarSpec[];
}

export interface InventoryCase {
  seed: number;
  format: 'yaml' | 'ini';
  fileName: string;
  groups: GroupSpec[];
  varsFiles: VarsFileSpec[];
}

const v = (yaml: string, ini = yaml): VarText => ({ yaml, ini });

/** Ports Ansible's ssh plugin can use, in every spelling that reaches it. */
const PORTS = [
  v('22'),
  v('2222'),
  v('"2200"', "'2200'"),
  v('02222'),
  v('0x1F90'),
  v("'0022'", '"0022"'),
  v('1_022'),
  v('~', 'None'),
];
/** Ports it cannot use (refused by edgeadm too), drawn less often. */
const BAD_PORTS = [v('2:02'), v('0o22'), v('70000'), v('22.0')];
const ADDRESSES = [
  v('10.0.0.1'),
  v('10.1.2.3'),
  v('a.example.com'),
  v('"fd00::5"', 'fd00::5'),
  v('~', 'None'),
  v('h-9'),
];
const USERS = [v('root'), v('deploy'), v('ops_1'), v('"admin"'), v('~', 'None')];
const PRIORITIES = [v('1'), v('2'), v('5'), v('"3"', "'3'"), v('0'), v('-1')];
const NOISE: [string, VarText][] = [
  ['app_tier', v('store')],
  ['ansible_become', v('yes')],
  ['ansible_hosts', v('10.9.9.9')],
  ['ansible_ssh_private_key_file', v('/keys/k1')],
];
const GROUP_NAMES = ['web', 'db', 'Edge', 'edge', 'b', 'B', 'a_b', 'x1', 'stores', 'control_plane'];
const HOST_PATTERNS = [
  'h1',
  'h2',
  'h3',
  'web-1',
  '10.0.0.9',
  'db.example.com',
  'n[1:3]',
  'n[01:03]',
  'r[a:c]',
  's[0:8:4]',
  'p1:2200',
  'q[1:2]:2201',
];

function connectionVar(random: SeededRandom, isGroup: boolean): VarSpec {
  const roll = random.int(0, isGroup ? 10 : 9);
  if (roll <= 1) {
    const value = random.chance(0.1) ? random.pick(BAD_PORTS) : random.pick(PORTS);
    return { key: random.pick(['ansible_port', 'ansible_ssh_port']), value };
  }
  if (roll <= 4) return { key: random.pick(['ansible_host', 'ansible_ssh_host']), value: random.pick(ADDRESSES) };
  if (roll <= 7) return { key: random.pick(['ansible_user', 'ansible_ssh_user']), value: random.pick(USERS) };
  if (roll <= 9) {
    const [key, value] = random.pick(NOISE);
    return { key, value };
  }
  return { key: 'ansible_group_priority', value: random.pick(PRIORITIES) };
}

function someVars(random: SeededRandom, isGroup: boolean, max: number): VarSpec[] {
  return Array.from({ length: random.int(0, max) }, () => connectionVar(random, isGroup));
}

/** The case for `seed`. */
export function generateInventoryCase(seed: number): InventoryCase {
  const random = seededRandom(seed);
  const format = random.chance(0.5) ? 'yaml' : 'ini';
  const fileName =
    format === 'yaml' ? random.pick(['inventory.yml', 'hosts.yaml', 'hosts']) : random.pick(['inventory.ini', 'hosts']);
  const names = ['all', ...GROUP_NAMES.filter(() => random.chance(0.3))];
  if (names.length === 1) names.push(random.pick(GROUP_NAMES));
  let anchors = 0;
  const anchorOrMerge = <T extends { anchor?: number; merge?: { anchor: number; at: number } }>(
    target: T,
    length: number,
  ): T => {
    if (format !== 'yaml') return target;
    if (random.chance(0.25)) target.anchor = ++anchors;
    else if (anchors > 0 && random.chance(0.3))
      target.merge = { anchor: random.int(1, anchors), at: random.int(0, length) };
    return target;
  };
  const makeGroup = (name: string, rank: number, depth: number): GroupSpec => {
    const sections: Section[] = [];
    for (let count = random.int(1, 3); count > 0; count--) {
      const kind = random.pick(['vars', 'hosts', 'hosts', 'children'] as const);
      // YAML allows each section once per mapping (a second would replace the first).
      if (format === 'yaml' && sections.some((section) => section.kind === kind)) continue;
      if (kind === 'vars') {
        const vars = someVars(random, name !== 'all', 3);
        sections.push(anchorOrMerge<Section & { kind: 'vars' }>({ kind, vars }, vars.length));
      } else if (kind === 'hosts') {
        const hosts = Array.from({ length: random.int(1, 3) }, () => {
          const vars = someVars(random, false, 3);
          return anchorOrMerge<HostEntry>({ pattern: random.pick(HOST_PATTERNS), vars }, vars.length);
        });
        sections.push({ kind, hosts });
      } else {
        const candidates = names.slice(rank + 1);
        if (candidates.length === 0) continue;
        const children = Array.from({ length: random.int(1, 2) }, () => {
          const child = random.pick(candidates);
          const isInline = format === 'yaml' && depth < 2 && random.chance(0.4);
          return isInline
            ? { name: child, inline: makeGroup(child, names.indexOf(child), depth + 1) }
            : { name: child };
        });
        sections.push({ kind, children });
      }
    }
    return { name, sections, ...(format === 'ini' && random.chance(0.9) ? { isDeclared: true } : {}) };
  };
  const groups = names.map((name, rank) => makeGroup(name, rank, 0));
  if (format === 'ini') shuffle(random, groups);
  // Hosts before any section (INI) or under a top-level `ungrouped` (YAML) are Ansible's ungrouped hosts.
  if (random.chance(0.25)) {
    const hosts = Array.from({ length: random.int(1, 2) }, () => ({
      pattern: random.pick(HOST_PATTERNS),
      vars: someVars(random, false, 2),
    }));
    groups.unshift({ name: 'ungrouped', sections: [{ kind: 'hosts', hosts }] });
  }
  const varsFiles: VarsFileSpec[] = [];
  for (let count = random.int(0, 3); count > 0; count--) {
    const isGroup = random.chance(0.6);
    varsFiles.push({
      dir: isGroup ? 'group_vars' : 'host_vars',
      name: isGroup ? random.pick(names) : random.pick(['h1', 'h2', 'n1', 'n01', 'ra', 'p1', 'web-1', 'q2']),
      form: random.pick(['', '.yml', '.yaml', '.json', 'dir', 'both'] as const),
      vars: someVars(random, false, 3).filter((entry) => entry.key !== 'ansible_group_priority'),
      more: someVars(random, false, 2).filter((entry) => entry.key !== 'ansible_group_priority'),
    });
  }
  return { seed, format, fileName, groups, varsFiles };
}

function shuffle<T>(random: SeededRandom, items: T[]): void {
  for (let index = items.length - 1; index > 0; index--) {
    const other = random.int(0, index);
    [items[index], items[other]] = [items[other]!, items[index]!];
  }
}

/** The files of a case, relative to its directory; the inventory is `fileName`. */
export function renderInventoryCase(spec: InventoryCase): Map<string, string> {
  const files = new Map<string, string>();
  files.set(spec.fileName, spec.format === 'yaml' ? renderYaml(spec.groups) : renderIni(spec.groups));
  const written = new Set<string>();
  for (const file of spec.varsFiles) {
    const base = `${file.dir}/${file.name}`;
    // One form per name: a file and a directory of one name cannot both exist.
    if (written.has(base)) continue;
    written.add(base);
    if (file.form === 'dir') {
      files.set(`${base}/10-first.yml`, yamlVars(file.vars));
      files.set(`${base}/20-second`, yamlVars(file.more));
    } else if (file.form === 'both') {
      files.set(base, yamlVars(file.vars));
      files.set(`${base}.yml`, yamlVars(file.more));
    } else if (file.form === '.json') {
      files.set(`${base}.json`, jsonVars(file.vars));
    } else files.set(`${base}${file.form}`, yamlVars(file.vars));
  }
  return files;
}

function yamlVars(vars: VarSpec[]): string {
  return vars.length === 0 ? '{}\n' : vars.map((entry) => `${entry.key}: ${entry.value.yaml}\n`).join('');
}

/** JSON has no octal, hex or sexagesimal: those values are written as text. */
function jsonVars(vars: VarSpec[]): string {
  const object: Record<string, unknown> = {};
  for (const entry of vars) {
    const text = entry.value.yaml;
    object[entry.key] =
      text === '~' ? null : /^-?[1-9]\d*$|^0$/.test(text) ? Number(text) : text.replace(/^["'](.*)["']$/, '$1');
  }
  return `${JSON.stringify(object, null, 2)}\n`;
}

function quoteKey(key: string): string {
  return /[[\]:]/.test(key) ? `'${key}'` : key;
}

function renderYaml(groups: GroupSpec[]): string {
  const lines: string[] = [];
  const written = new Set<number>();
  const mapping = (indent: string, vars: VarSpec[], merge: { anchor: number; at: number } | undefined): string[] => {
    const body = vars.map((entry) => `${indent}${entry.key}: ${entry.value.yaml}`);
    if (merge !== undefined && written.has(merge.anchor)) body.splice(merge.at, 0, `${indent}<<: *a${merge.anchor}`);
    return body;
  };
  const opener = (head: string, anchor: number | undefined, body: string[]): string => {
    const tag = anchor === undefined ? '' : ` &a${anchor}`;
    return body.length === 0 ? `${head}:${tag}${anchor === undefined ? '' : ' {}'}` : `${head}:${tag}`;
  };
  const group = (spec: GroupSpec, indent: string): void => {
    lines.push(`${indent}${spec.name}:${spec.sections.length === 0 ? '' : ''}`);
    for (const section of spec.sections) {
      const inner = `${indent}  `;
      if (section.kind === 'vars') {
        const body = mapping(`${inner}  `, section.vars, section.merge);
        lines.push(opener(`${inner}vars`, section.anchor, body), ...body);
        if (section.anchor !== undefined) written.add(section.anchor);
      } else if (section.kind === 'hosts') {
        lines.push(`${inner}hosts:`);
        for (const host of section.hosts) {
          const body = mapping(`${inner}    `, host.vars, host.merge);
          lines.push(opener(`${inner}  ${quoteKey(host.pattern)}`, host.anchor, body), ...body);
          if (host.anchor !== undefined) written.add(host.anchor);
        }
      } else {
        lines.push(`${inner}children:`);
        for (const child of section.children) {
          if (child.inline === undefined) lines.push(`${inner}  ${child.name}:`);
          else group(child.inline, `${inner}  `);
        }
      }
    }
  };
  for (const spec of groups) group(spec, '');
  return `${lines.join('\n')}\n`;
}

function renderIni(groups: GroupSpec[]): string {
  const lines: string[] = [];
  const group = (spec: GroupSpec): void => {
    if (spec.isDeclared) lines.push(`[${spec.name}]`);
    for (const section of spec.sections) {
      // The file's first lines, before any section header, belong to `ungrouped`.
      if (lines.length === 0 && spec.name === 'ungrouped' && section.kind === 'hosts') {
        for (const host of section.hosts) {
          lines.push([host.pattern, ...host.vars.map((entry) => `${entry.key}=${entry.value.ini}`)].join(' '));
        }
        continue;
      }
      if (section.kind === 'vars') {
        lines.push(`[${spec.name}:vars]`, ...section.vars.map((entry) => `${entry.key}=${entry.value.ini}`));
      } else if (section.kind === 'hosts') {
        lines.push(`[${spec.name}]`);
        for (const host of section.hosts) {
          lines.push([host.pattern, ...host.vars.map((entry) => `${entry.key}=${entry.value.ini}`)].join(' '));
        }
      } else {
        lines.push(`[${spec.name}:children]`, ...section.children.map((child) => child.name));
        for (const child of section.children) if (child.inline) group(child.inline);
      }
    }
    if (spec.sections.length === 0) lines.push(`[${spec.name}]`);
  };
  for (const spec of groups) group(spec);
  return `${lines.join('\n')}\n`;
}

/** Cases one step smaller than `spec`: one thing left out each. */
export function shrinkInventoryCase(spec: InventoryCase): InventoryCase[] {
  const smaller: InventoryCase[] = [];
  const clone = (): InventoryCase => structuredClone(spec);
  spec.varsFiles.forEach((_, index) => {
    const next = clone();
    next.varsFiles.splice(index, 1);
    smaller.push(next);
  });
  for (const [index, file] of spec.varsFiles.entries()) {
    for (const list of ['vars', 'more'] as const) {
      file[list].forEach((_, at) => {
        const next = clone();
        next.varsFiles[index]![list].splice(at, 1);
        smaller.push(next);
      });
    }
    if (file.form !== '.yml') {
      const next = clone();
      next.varsFiles[index]!.form = '.yml';
      smaller.push(next);
    }
  }
  /** Every group spec, inline ones too, by a path of indexes. */
  const visit = (groups: GroupSpec[], edit: (change: (groups: GroupSpec[]) => void) => void): void => {
    groups.forEach((group, groupIndex) => {
      edit((list) => list.splice(groupIndex, 1));
      if (group.isDeclared) edit((list) => delete list[groupIndex]!.isDeclared);
      group.sections.forEach((section, sectionIndex) => {
        const at = (list: GroupSpec[]): Section => list[groupIndex]!.sections[sectionIndex]!;
        edit((list) => list[groupIndex]!.sections.splice(sectionIndex, 1));
        if (section.kind === 'vars') {
          section.vars.forEach((_, varIndex) =>
            edit((list) => (at(list) as { vars: VarSpec[] }).vars.splice(varIndex, 1)),
          );
          if (section.merge) edit((list) => delete (at(list) as { merge?: unknown }).merge);
        } else if (section.kind === 'hosts') {
          section.hosts.forEach((host, hostIndex) => {
            const hostAt = (list: GroupSpec[]): HostEntry => (at(list) as { hosts: HostEntry[] }).hosts[hostIndex]!;
            edit((list) => (at(list) as { hosts: HostEntry[] }).hosts.splice(hostIndex, 1));
            host.vars.forEach((_, varIndex) => edit((list) => hostAt(list).vars.splice(varIndex, 1)));
            if (host.merge) edit((list) => delete hostAt(list).merge);
          });
        } else {
          section.children.forEach((child, childIndex) => {
            const children = (list: GroupSpec[]) =>
              (at(list) as { children: { name: string; inline?: GroupSpec }[] }).children;
            edit((list) => children(list).splice(childIndex, 1));
            if (child.inline) {
              edit((list) => delete children(list)[childIndex]!.inline);
              visit([child.inline], (change) =>
                edit((list) => {
                  const inner = [children(list)[childIndex]!.inline!];
                  change(inner);
                  if (inner.length === 0) delete children(list)[childIndex]!.inline;
                }),
              );
            }
          });
        }
      });
    });
  };
  visit(spec.groups, (change) => {
    const next = clone();
    change(next.groups);
    smaller.push(next);
  });
  return smaller;
}
