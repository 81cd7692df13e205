/**
 * OpenSSH's client configuration (`~/.ssh/config`, `ssh -F FILE`), resolved
 * for one host exactly as `ssh -G -F FILE HOST` resolves it (OpenSSH 9.2,
 * readconf.c), for the settings edgeadm uses: HostName, User, Port,
 * IdentityFile and ProxyJump.
 *
 * The rules that matter, all OpenSSH's:
 * - the file is read top to bottom for each host, and the first value of a
 *   keyword wins (IdentityFile accumulates); what was typed (`user@host:port`,
 *   `-J`) comes before the file;
 * - `Host` patterns match the name as typed, case-sensitively; `Match`
 *   evaluates `all`, `host`, `originalhost` (both lower-cased, as
 *   match_hostname does), `user` and `localuser`;
 * - `Include` inside a block that does not apply is still read (and its
 *   errors still count), but nothing in it applies;
 * - the whole file is refused for an unknown keyword (unless IgnoreUnknown
 *   names it), a keyword without argument, trailing arguments, unbalanced
 *   quotes, a bad Port (`0x10`, `1e3`, `22.0`) or a bad ProxyJump, wherever
 *   the line is, even in a block that does not apply;
 * - `%h` in HostName is the name as typed; the host name is then lower-cased,
 *   and IdentityFile's `%h`, `%p` and `%r` are the final host name, port and
 *   user (the typed user first).
 *
 * What edgeadm does not do is refused when it is reached, naming it:
 * `Match exec`, `Match final`, canonicalisation, ProxyCommand.
 *
 * Pure: files are read through the {@link SshConfigEnvironment}.
 */
import { posix } from 'node:path';
import { ValidationError } from '../errors.js';
import { isSshConfigKeyword } from './ssh-config-keywords.js';

/** How deep `Include` may nest (OpenSSH's READCONF_MAX_DEPTH). */
export const MAX_INCLUDE_DEPTH = 16;
/** Most IdentityFile entries (OpenSSH's SSH_MAX_IDENTITY_FILES). */
export const MAX_IDENTITY_FILES = 100;
/** The SSH port when none is set. */
const DEFAULT_PORT = 22;

/** The key files ssh tries when the configuration names none, in its order. */
export const DEFAULT_IDENTITY_FILES = [
  'id_rsa',
  'id_ecdsa',
  'id_ecdsa_sk',
  'id_ed25519',
  'id_ed25519_sk',
  'id_xmss',
  'id_dsa',
] as const;

/** What the resolver reads and knows about the local side. */
export interface SshConfigEnvironment {
  /** The local user's home (the password database's, as ssh takes it). */
  homeDir: string;
  localUser: string;
  /** Numeric user id, for `%i`. */
  localUid?: number;
  /** This machine's host name, for `%l` and `%L`. */
  localHostName?: string;
  /** A file's text, or undefined when it cannot be read. */
  readFile(path: string): string | undefined;
  /** The files an absolute glob pattern names, sorted (OpenSSH's glob(3)). */
  glob(pattern: string): string[];
  /** A TCP service's port from /etc/services (ssh accepts `Port ssh`), or undefined. */
  servicePort?(name: string): number | undefined;
}

/** What was typed: `ssh [-l user] [-p port] [-J jumps] host`. */
export interface SshConfigQuery {
  /** The host as typed (an alias, a name or an address). */
  host: string;
  user?: string | undefined;
  port?: number | undefined;
  /** `-J`: replaces the configuration's ProxyJump. */
  jumps?: string[] | undefined;
}

/** The settings of one host, as `ssh -G` prints them. */
export interface ResolvedSshConfig {
  /** The host name to connect to (HostName, expanded and lower-cased). */
  hostName: string;
  user: string;
  port: number;
  /** Whether User or Port came from the file (not a default). */
  isUserSet: boolean;
  isPortSet: boolean;
  /** IdentityFile entries, expanded, in order (`none` left out). */
  identityFiles: string[];
  /** True when no IdentityFile applies, so ssh tries its default keys; `IdentityFile none` alone means no key file. */
  usesDefaultKeys: boolean;
  /** ProxyJump hops in order; empty for none. */
  proxyJump: string[];
}

/** Settings collected while reading, first value winning. */
interface Collected {
  hostName?: string;
  user?: string;
  port?: number;
  identityFiles: string[];
  proxyJump?: string[];
  proxyCommand?: string;
  canonicalize?: string;
  ignoreUnknown?: string;
}

/** A reading in progress: what it needs at every line. */
interface Reading {
  query: SshConfigQuery;
  env: SshConfigEnvironment;
  collected: Collected;
}

function configError(where: string, message: string, hints: string[] = []): ValidationError {
  return new ValidationError(`${where}: ${message}`, {
    code: 'E_SSH_CONFIG',
    hints: hints.length > 0 ? hints : ['ssh refuses this file too: check it with "ssh -G -F FILE HOST".'],
  });
}

function unsupported(where: string, feature: string, forward: string): ValidationError {
  return new ValidationError(`${where}: ${feature} is not supported by edgeadm`, {
    code: 'E_SSH_CONFIG_UNSUPPORTED',
    hints: [forward],
  });
}

/**
 * Resolves `query` through the configuration file `file` (undefined: no
 * file). Throws E_SSH_CONFIG for a file ssh refuses, and
 * E_SSH_CONFIG_UNSUPPORTED for what edgeadm does not do.
 */
export function resolveSshConfig(
  file: string | undefined,
  query: SshConfigQuery,
  env: SshConfigEnvironment,
): ResolvedSshConfig {
  const reading: Reading = {
    query,
    env,
    collected: { identityFiles: [] },
  };
  if (query.jumps !== undefined && query.jumps.length > 0) {
    // `-J` comes before the file, and rules out its ProxyCommand as ssh's own -J does.
    reading.collected.proxyJump = [...query.jumps];
    reading.collected.proxyCommand = 'none';
  }
  if (query.port !== undefined) reading.collected.port = query.port;
  if (query.user !== undefined) reading.collected.user = query.user;
  if (file !== undefined) {
    const text = env.readFile(file);
    if (text !== undefined) readConfig(reading, text, file, 0, { isActive: true }, false);
  }
  const collected = reading.collected;
  if (collected.proxyCommand !== undefined && collected.proxyCommand.toLowerCase() !== 'none') {
    throw unsupported(
      file ?? 'ssh config',
      `ProxyCommand (for ${query.host})`,
      'Reach the host through bastions with ProxyJump (or --ssh-jump), which edgeadm follows itself.',
    );
  }
  if (collected.canonicalize !== undefined && !['no', 'false'].includes(collected.canonicalize.toLowerCase())) {
    throw unsupported(
      file ?? 'ssh config',
      `CanonicalizeHostname ${collected.canonicalize} (for ${query.host})`,
      'Write the full host name in HostName instead.',
    );
  }
  const hostName = (
    collected.hostName === undefined ? query.host : expandHostName(collected.hostName, query.host)
  ).toLowerCase();
  const user = collected.user ?? env.localUser;
  const port = collected.port ?? DEFAULT_PORT;
  const tokens: Record<string, string | undefined> = {
    '%': '%',
    d: env.homeDir,
    h: hostName,
    i: env.localUid === undefined ? undefined : String(env.localUid),
    l: env.localHostName,
    L: env.localHostName?.split('.')[0],
    n: query.host,
    p: String(port),
    r: user,
    u: env.localUser,
  };
  const proxyJump = collected.proxyJump === undefined || isNone(collected.proxyJump) ? [] : collected.proxyJump;
  const lastHop = proxyJump.length === 0 ? undefined : parseJumpHop(proxyJump.at(-1)!);
  // ssh's own guard: the last jump host is the host itself (same name, port and user).
  if (
    lastHop !== undefined &&
    lastHop.host === hostName &&
    (lastHop.port ?? DEFAULT_PORT) === port &&
    (lastHop.user ?? user) === user
  ) {
    throw configError(file ?? 'ssh config', `jumphost loop via ${lastHop.host} (for ${query.host})`);
  }
  const identityFiles = collected.identityFiles
    .filter((path) => path.toLowerCase() !== 'none')
    .map((path) => expandIdentityFile(path, tokens, env));
  return {
    hostName,
    user,
    port,
    isUserSet: collected.user !== undefined,
    isPortSet: collected.port !== undefined,
    identityFiles,
    usesDefaultKeys: collected.identityFiles.length === 0,
    proxyJump,
  };
}

function isNone(hops: string[]): boolean {
  return hops.length === 1 && hops[0]!.toLowerCase() === 'none';
}

/** HostName takes `%h` (the name as typed) and `%%` only. */
function expandHostName(value: string, typed: string): string {
  return value.replace(/%(.)/g, (match, token: string) => (token === 'h' ? typed : token === '%' ? '%' : match));
}

function expandIdentityFile(
  path: string,
  tokens: Record<string, string | undefined>,
  env: SshConfigEnvironment,
): string {
  const expanded = path.replace(/%(.?)/g, (_match, token: string) => {
    const value = tokens[token];
    if (value === undefined) {
      throw unsupported(
        `IdentityFile ${path}`,
        `the token %${token}`,
        'Use %d, %h, %n, %p, %r, %u, %i, %l, %L or %%, or write the path out.',
      );
    }
    return value;
  });
  if (expanded === '~') return env.homeDir;
  if (expanded.startsWith('~/')) return posix.join(env.homeDir, expanded.slice(2));
  if (expanded.startsWith('~')) {
    throw unsupported(`IdentityFile ${path}`, "another user's home (~user)", 'Write the path out.');
  }
  return expanded;
}

/** Whether a block that starts here applies: its own verdict, or never inside an Include of an inactive block. */
interface ActiveState {
  isActive: boolean;
}

function readConfig(
  reading: Reading,
  text: string,
  file: string,
  depth: number,
  active: ActiveState,
  isNeverMatch: boolean,
): void {
  const lines = text.split('\n');
  for (const [index, raw] of lines.entries()) {
    processLine(reading, raw, `${file} line ${index + 1}`, file, depth, active, isNeverMatch);
  }
}

function processLine(
  reading: Reading,
  raw: string,
  where: string,
  file: string,
  depth: number,
  active: ActiveState,
  isNeverMatch: boolean,
): void {
  const line = raw.replace(/[ \t\r\n\f]+$/, '');
  const split = keywordOf(line, where);
  if (split === undefined) return;
  const { keyword, rest } = split;
  if (rest === '') throw configError(where, `no argument after keyword "${keyword}"`);
  const collected = reading.collected;
  if (!isSshConfigKeyword(keyword)) {
    if (collected.ignoreUnknown !== undefined && matchPatternList(keyword, collected.ignoreUnknown, true) === 1) return;
    throw configError(where, `Bad configuration option: ${keyword}`);
  }
  if (keyword === 'match') {
    const verdict = matchLine(reading, rest, where);
    active.isActive = isNeverMatch ? false : verdict;
    return;
  }
  const args = argvSplit(rest, where);
  const next = (): string => {
    const arg = args.shift();
    if (arg === undefined) throw configError(where, `missing argument for ${keyword}`);
    return arg;
  };
  const isActive = active.isActive;
  switch (keyword) {
    case 'host': {
      active.isActive = false;
      for (const arg of args.splice(0)) {
        if (arg === '') throw configError(where, 'keyword host empty argument');
        if (isNeverMatch) break;
        const isNegated = arg.startsWith('!');
        if (matchPattern(reading.query.host, isNegated ? arg.slice(1) : arg)) {
          if (isNegated) {
            active.isActive = false;
            break;
          }
          active.isActive = true;
        }
      }
      return;
    }
    case 'include': {
      if (depth >= MAX_INCLUDE_DEPTH) throw configError(where, `Include nested more than ${MAX_INCLUDE_DEPTH} deep`);
      for (const pattern of args.splice(0)) {
        const anchored = anchorInclude(pattern, reading.env);
        for (const path of reading.env.glob(anchored)) {
          const included = reading.env.readFile(path);
          if (included === undefined) continue;
          const before = active.isActive;
          // The included file starts in the including block's state, and that state returns after it.
          readConfig(reading, included, path, depth + 1, active, isNeverMatch || !before);
          active.isActive = before;
        }
      }
      return;
    }
    case 'hostname':
      setFirst(isActive, collected, 'hostName', next());
      break;
    case 'user':
      setFirst(isActive, collected, 'user', next());
      break;
    case 'port': {
      const value = next();
      const port = parsePortArgument(value, reading.env);
      if (port === undefined) throw configError(where, `Bad port '${value}'.`);
      setFirst(isActive, collected, 'port', port);
      break;
    }
    case 'identityfile': {
      const value = next();
      if (isActive) {
        if (collected.identityFiles.length >= MAX_IDENTITY_FILES) {
          throw configError(where, `too many identity files specified (max ${MAX_IDENTITY_FILES})`);
        }
        if (!collected.identityFiles.includes(value)) collected.identityFiles.push(value);
      }
      break;
    }
    case 'proxyjump': {
      const value = next();
      const hops = parseJump(value);
      if (hops === undefined) throw configError(where, `Invalid ProxyJump "${value}"`);
      if (isActive && collected.proxyJump === undefined && collected.proxyCommand === undefined) {
        collected.proxyJump = hops;
        if (!isNone(hops)) collected.proxyCommand = 'none';
      }
      break;
    }
    case 'proxycommand':
      // The rest of the line is the command. `ProxyJump none` before it does not rule it out; another ProxyJump does.
      if (
        isActive &&
        collected.proxyCommand === undefined &&
        (collected.proxyJump === undefined || isNone(collected.proxyJump))
      ) {
        collected.proxyCommand = rest;
      }
      return;
    case 'canonicalizehostname':
      setFirst(isActive, collected, 'canonicalize', next());
      break;
    case 'ignoreunknown':
      setFirst(isActive, collected, 'ignoreUnknown', next());
      break;
    default:
      // A keyword edgeadm does not use: its arguments are ssh's business.
      return;
  }
  if (args.length > 0) throw configError(where, `garbage at end of line: "${args.join(' ')}"`);
}

function setFirst<K extends 'hostName' | 'user' | 'port' | 'canonicalize' | 'ignoreUnknown'>(
  isActive: boolean,
  collected: Collected,
  key: K,
  value: Collected[K],
): void {
  if (isActive && collected[key] === undefined) collected[key] = value;
}

/** Relative Include paths of a user configuration are under ~/.ssh; `~/` is the home. */
function anchorInclude(pattern: string, env: SshConfigEnvironment): string {
  if (pattern.startsWith('~/')) return posix.join(env.homeDir, pattern.slice(2));
  if (pattern.startsWith('/')) return pattern;
  return posix.join(env.homeDir, '.ssh', pattern);
}

/**
 * The keyword and the rest of a line, split as OpenSSH's strdelim does
 * (whitespace or one `=`), or undefined for a blank or comment line.
 */
function keywordOf(line: string, where: string): { keyword: string; rest: string } | undefined {
  const match = /^[ \t]*(?:"([^"]*)"|([^ \t="]+))?/.exec(line)!;
  if (line.trimStart().startsWith('"') && match[1] === undefined) throw configError(where, 'invalid quotes');
  const keyword = match[1] ?? match[2];
  if (keyword === undefined || keyword === '' || keyword.startsWith('#')) return undefined;
  let rest = line.slice(match[0].length);
  rest = rest.replace(/^[ \t]*=?[ \t]*/, '');
  return { keyword: keyword.toLowerCase(), rest };
}

/**
 * Splits arguments as OpenSSH's argv_split does: single or double quotes,
 * backslash escaping a quote, a backslash or (unquoted) a space, and a `#`
 * at the start of a word ending the line.
 */
export function argvSplit(text: string, where: string): string[] {
  const args: string[] = [];
  let index = 0;
  while (index < text.length) {
    while (text[index] === ' ' || text[index] === '\t') index++;
    if (index >= text.length || text[index] === '#') break;
    let arg = '';
    let quote = '';
    for (; index < text.length; index++) {
      const char = text[index]!;
      const following = text[index + 1];
      if (char === '\\') {
        if (following === "'" || following === '"' || following === '\\' || (quote === '' && following === ' ')) {
          index++;
          arg += following;
        } else arg += char;
      } else if (quote === '' && (char === ' ' || char === '\t')) break;
      else if (quote === '' && (char === '"' || char === "'")) quote = char;
      else if (quote !== '' && char === quote) quote = '';
      else arg += char;
    }
    if (quote !== '') throw configError(where, 'invalid quotes');
    args.push(arg);
  }
  return args;
}

/**
 * A Port argument as OpenSSH's a2port reads it: a base-10 number from 1 to
 * 65535 (strtonum: optional leading spaces and sign, nothing after), or a
 * TCP service name; undefined for anything else.
 */
export function parsePortArgument(text: string, env: Pick<SshConfigEnvironment, 'servicePort'>): number | undefined {
  if (/^[ \t\n\v\f\r]*[+-]?\d+$/.test(text)) {
    const value = Number(text.trim());
    return value >= 1 && value <= 65535 ? value : undefined;
  }
  const service = env.servicePort?.(text);
  return service !== undefined && service > 0 ? service : undefined;
}

/**
 * ProxyJump hops, checked as OpenSSH's parse_jump checks them (each
 * `[user@]host[:port]` or `ssh://[user@]host[:port]`); undefined when one is
 * malformed. Text after `#` is a comment.
 */
export function parseJump(value: string): string[] | undefined {
  const text = value.split('#')[0]!.replace(/[ \t]+$/, '');
  if (text.toLowerCase() === 'none') return ['none'];
  const hops = text.split(',');
  for (const hop of hops) if (parseJumpHop(hop) === undefined) return undefined;
  return hops;
}

/** One jump host: `[user@]host[:port]`, `[user@][v6]:port` or `ssh://…`. */
export function parseJumpHop(hop: string): { user?: string; host: string; port?: number } | undefined {
  const uri = /^ssh:\/\/(?:([^@/]*)@)?(\[[^\]]+\]|[^:/@]+)(?::(\d+))?\/?$/i.exec(hop);
  const plain = /^(?:(.*)@)?(\[[^\]]+\]|[^:@[\]]+)(?::([^:]*))?$/.exec(hop);
  if (/^ssh:\/\//i.test(hop) && uri === null) return undefined;
  const match = uri ?? plain;
  if (match === null) return undefined;
  const [, user, rawHost = '', portText] = match;
  const host = rawHost.replace(/^\[(.*)\]$/, '$1');
  if (host === '' || user === '') return undefined;
  let port: number | undefined;
  if (portText !== undefined && portText !== '') {
    port = parsePortArgument(portText, {});
    if (port === undefined) return undefined;
  }
  return { ...(user === undefined ? {} : { user }), host, ...(port === undefined ? {} : { port }) };
}

/** One `Match` line: true when every criterion holds (OpenSSH's match_cfg_line, first pass). */
function matchLine(reading: Reading, rest: string, where: string): boolean {
  const { query, env, collected } = reading;
  const words = argvSplit(rest, where);
  const original = query.host;
  const host = collected.hostName === undefined ? original : expandHostName(collected.hostName, original);
  const remoteUser = collected.user ?? env.localUser;
  let result = true;
  let attributes = 0;
  for (let index = 0; index < words.length; index++) {
    const word = words[index]!;
    if (word.startsWith('#')) break;
    const isNegated = word.startsWith('!');
    const attribute = (isNegated ? word.slice(1) : word).toLowerCase();
    if (attribute === 'all') {
      const following = words[index + 1];
      if (attributes > 0 || (following !== undefined && !following.startsWith('#'))) {
        throw configError(where, "'all' cannot be combined with other Match attributes");
      }
      return result && !isNegated;
    }
    attributes++;
    if (attribute === 'canonical' || attribute === 'final') {
      if (attribute === 'final') {
        throw unsupported(where, 'Match final', 'Use Match host or Host with the final host name.');
      }
      // The first pass runs before canonicalisation: `canonical` does not hold.
      if (!isNegated) result = false;
      continue;
    }
    const argument = words[++index];
    if (argument === undefined || argument === '' || argument.startsWith('#')) {
      throw configError(where, `Missing Match criteria for ${attribute}`);
    }
    let isMatched: boolean;
    if (attribute === 'host') isMatched = matchPatternList(host.toLowerCase(), argument, true) === 1;
    else if (attribute === 'originalhost') isMatched = matchPatternList(original.toLowerCase(), argument, true) === 1;
    else if (attribute === 'user') isMatched = matchPatternList(remoteUser, argument, false) === 1;
    else if (attribute === 'localuser') isMatched = matchPatternList(env.localUser, argument, false) === 1;
    else if (attribute === 'exec') {
      if (!result) continue;
      throw unsupported(where, 'Match exec', 'Match on host, originalhost, user or localuser instead.');
    } else throw configError(where, `Unsupported Match attribute ${attribute}`);
    if (isMatched === isNegated) result = false;
  }
  if (attributes === 0) throw configError(where, 'One or more attributes required for Match');
  return result;
}

/** OpenSSH's match_pattern: `*` and `?` wildcards, case-sensitive. */
export function matchPattern(text: string, pattern: string): boolean {
  const source = [...pattern]
    .map((char) => (char === '*' ? '[\\s\\S]*' : char === '?' ? '[\\s\\S]' : char.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, 'u').test(text);
}

/**
 * OpenSSH's match_pattern_list: comma-separated patterns, `!` negating; 1
 * for a match, -1 for a negated match, 0 for none. With `isLowered` the
 * patterns (not the text) are lower-cased first, as for host names.
 */
export function matchPatternList(text: string, list: string, isLowered: boolean): number {
  let found = 0;
  for (const raw of list.split(',')) {
    const isNegated = raw.startsWith('!');
    const pattern = isNegated ? raw.slice(1) : raw;
    if (matchPattern(text, isLowered ? pattern.toLowerCase() : pattern)) {
      if (isNegated) return -1;
      found = 1;
    }
  }
  return found;
}
