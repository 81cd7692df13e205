/**
 * Seeded generator of ssh configurations for the differential suite: Host
 * and Match blocks, patterns in several cases, HostName with %h, User, Port
 * in good and bad spellings, IdentityFile with tokens, ProxyJump lists,
 * Include (of files whose blocks may or may not apply), key=value lines,
 * comments, unknown keywords and IgnoreUnknown; and the hosts to resolve,
 * some typed as user@host. Cases are data, rendered by
 * {@link renderSshConfigCase} and made smaller by {@link shrinkSshConfigCase}.
 */
import { seededRandom, type SeededRandom } from './seeded-random.js';

/** A block: a header (`Host …`, `Match …`, or none for the lines before the first) and its lines. */
export interface SshBlock {
  header?: string;
  lines: string[];
}

export interface SshConfigCase {
  seed: number;
  /** The main file's blocks; `Include INC1` stands for the first include file, and so on. */
  main: SshBlock[];
  includes: SshBlock[][];
  /** Hosts as typed: `host` or `user@host`. */
  queries: string[];
}

const TYPED = [
  'web1',
  'WEB1',
  'Web1',
  'db1',
  'db2',
  'store-1',
  'store-10',
  'bastion',
  'jumpa',
  'jumpb',
  '10.0.0.5',
  'edge.example.com',
];
const PATTERNS = [
  'web1',
  'WEB1',
  'web*',
  'web?',
  '*',
  '!db1',
  'db*',
  'store-?',
  'store-*',
  '*.example.com',
  'bastion',
  'jump*',
  '10.0.0.*',
  '!store-10',
  'jumpa',
  'jumpb',
];
const MATCHES = [
  'all',
  'host web1',
  'host WEB1',
  'originalhost web*',
  'user typed',
  'user root',
  '!user typed',
  'localuser root',
  'host *.example.com',
  'originalhost db1 user ops',
  'host real.example.com',
  '!originalhost jump*',
];

function optionLine(random: SeededRandom, includes: number): string {
  const keyword = (name: string): string => random.pick([name, name, name.toLowerCase(), name.toUpperCase()]);
  const separator = (): string => random.pick([' ', ' ', '=', ' = ']);
  const roll = random.int(0, 100);
  const line = (name: string, value: string): string => `${keyword(name)}${separator()}${value}`;
  if (roll < 16)
    return line(
      'HostName',
      random.pick(['web-%h.example.com', 'Real.Example.COM', '10.0.0.9', '%h.lan', 'real.example.com', '"10.0.0.8"']),
    );
  if (roll < 30) return line('User', random.pick(['ops', 'admin', 'deploy', 'root', '"quoted"']));
  if (roll < 44) {
    const bad = random.chance(0.03);
    return line(
      'Port',
      bad
        ? random.pick(['0x10', '1e3', '22.0', '0', '70000'])
        : random.pick(['2222', '22', '0022', '+2200', 'ssh', '2201 # comment']),
    );
  }
  if (roll < 60)
    return line(
      'IdentityFile',
      random.pick([
        '~/.ssh/id_%r',
        '/keys/%h_%p',
        'keys/rel',
        '~/.ssh/k_%n_%u',
        'none',
        '"/keys/with space"',
        '%d/.ssh/k_%l_%L',
        '/keys/%%literal',
      ]),
    );
  if (roll < 74) {
    const bad = random.chance(0.02);
    return line(
      'ProxyJump',
      bad
        ? 'ops@'
        : random.pick([
            'jumpa',
            'jumpb',
            'jumpa,jumpb',
            'ops@jumpb:2200',
            'none',
            'jumpa,ops@10.0.0.7:2201',
            'bastion',
            'jumpb,bastion',
          ]),
    );
  }
  if (roll < 80 && includes > 0) return `Include INC${random.int(1, includes)}`;
  // Keywords edgeadm does not use, with values ssh takes (edgeadm does not check their values).
  if (roll < 86) {
    const [name, value] = random.pick([
      ['ServerAliveInterval', '30'],
      ['ForwardAgent', 'no'],
      ['Compression', 'yes'],
    ]);
    return line(name!, value!);
  }
  if (roll < 90) return random.pick(['# a comment', '', '   # indented comment']);
  // Rare, as each refuses whole files or hosts: an unknown keyword, and a ProxyCommand.
  if (roll < 92) return random.chance(0.3) ? 'Bogus yes' : 'IgnoreUnknown Bogus';
  if (roll < 93 && random.chance(0.5)) return 'ProxyCommand nc %h %p';
  return line('User', random.pick(['ops', 'admin']));
}

function blocks(random: SeededRandom, count: number, includes: number): SshBlock[] {
  const result: SshBlock[] = [];
  for (let index = 0; index < count; index++) {
    const lines = Array.from({ length: random.int(1, 4) }, () => optionLine(random, includes));
    if (index === 0 && random.chance(0.3)) {
      result.push({ lines });
      continue;
    }
    const header = random.chance(0.8)
      ? `${random.pick(['Host', 'Host', 'host', 'HOST'])} ${Array.from({ length: random.int(1, 3) }, () => random.pick(PATTERNS)).join(' ')}`
      : `Match ${random.pick(MATCHES)}`;
    result.push({ header, lines });
  }
  return result;
}

/** The case for `seed`. */
export function generateSshConfigCase(seed: number): SshConfigCase {
  const random = seededRandom(seed);
  const includeCount = random.chance(0.4) ? random.int(1, 2) : 0;
  const includes = Array.from({ length: includeCount }, () => blocks(random, random.int(1, 2), 0));
  const main = blocks(random, random.int(1, 5), includeCount);
  const queries = Array.from({ length: 3 }, () => `${random.chance(0.2) ? 'typed@' : ''}${random.pick(TYPED)}`);
  return { seed, main, includes, queries };
}

/** The files of a case: `config` and `incN.conf`, Include lines pointing at them under `dir`. */
export function renderSshConfigCase(spec: SshConfigCase, dir: string): Map<string, string> {
  const render = (list: SshBlock[]): string =>
    list
      .map((block) =>
        [...(block.header === undefined ? [] : [block.header]), ...block.lines.map((line) => `  ${line}`)]
          .map((line) => line.replace(/Include INC(\d)/, (_match, n: string) => `Include ${dir}/inc${n}.conf`))
          .join('\n'),
      )
      .join('\n');
  const files = new Map<string, string>([['config', `${render(spec.main)}\n`]]);
  spec.includes.forEach((include, index) => files.set(`inc${index + 1}.conf`, `${render(include)}\n`));
  return files;
}

/** Cases one step smaller: one query, block, line or include file left out. */
export function shrinkSshConfigCase(spec: SshConfigCase): SshConfigCase[] {
  const smaller: SshConfigCase[] = [];
  const edit = (change: (next: SshConfigCase) => void): void => {
    const next = structuredClone(spec);
    change(next);
    smaller.push(next);
  };
  spec.queries.forEach((_, index) => spec.queries.length > 1 && edit((next) => next.queries.splice(index, 1)));
  const lists: ((next: SshConfigCase) => SshBlock[])[] = [
    (next) => next.main,
    ...spec.includes.map((_, index) => (next: SshConfigCase) => next.includes[index]!),
  ];
  for (const listOf of lists) {
    const list = listOf(spec);
    list.forEach((block, blockIndex) => {
      edit((next) => listOf(next).splice(blockIndex, 1));
      if (block.header !== undefined && /^Host \S+ /.test(block.header)) {
        edit((next) => (listOf(next)[blockIndex]!.header = block.header!.split(' ').slice(0, 2).join(' ')));
      }
      block.lines.forEach((_, lineIndex) => edit((next) => listOf(next)[blockIndex]!.lines.splice(lineIndex, 1)));
    });
  }
  spec.includes.forEach((include, index) => include.length > 0 && edit((next) => (next.includes[index] = [])));
  return smaller;
}
