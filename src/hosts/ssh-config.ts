/**
 * The subset of OpenSSH's client configuration (`~/.ssh/config`) that
 * edgeadm honours: `Host` blocks with wildcard and negated patterns, and the
 * keywords HostName, User, Port, IdentityFile and ProxyJump, plus `Include`.
 *
 * The rules are ssh_config(5)'s: blocks are read top to bottom, the first
 * value found for a keyword wins (IdentityFile accumulates), and a block
 * applies when any of its patterns matches the name given on the command line
 * and none of its negated patterns does. `Match` blocks are not evaluated:
 * their options are skipped, never applied by mistake.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { ValidationError } from '../errors.js';
import { wildcardMatches } from './known-hosts.js';

/** How deep `Include` may nest (OpenSSH's limit too). */
export const MAX_INCLUDE_DEPTH = 16;

/** The keywords edgeadm reads (lower case, as matched). */
const KEYWORDS = new Set(['hostname', 'user', 'port', 'identityfile', 'proxyjump']);

/** One `Host` block. */
export interface SshConfigBlock {
  /** The block's patterns; the options before the first `Host` line form a block with `*`. */
  patterns: string[];
  /** Keyword (lower case) to its values, in file order. */
  options: Map<string, string[]>;
  /** Where the block starts, for messages. */
  source: string;
}

/** What the configuration says about one host alias. */
export interface ResolvedSshConfig {
  hostName: string | undefined;
  user: string | undefined;
  port: number | undefined;
  identityFiles: string[];
  /** ProxyJump hops in order, or undefined when unset; `none` gives []. */
  proxyJump: string[] | undefined;
}

/** Environment for expanding `~` and `%` tokens. */
export interface SshConfigContext {
  homeDir: string;
  localUser: string;
}

/** The context of the user running edgeadm. */
export function defaultSshConfigContext(): SshConfigContext {
  return { homeDir: homedir(), localUser: userInfo().username };
}

/** Parses config text; `Include` lines are followed through `readFile`. */
export function parseSshConfig(
  text: string,
  options: { source?: string; context?: SshConfigContext; readFile?: (path: string) => string | undefined } = {},
): SshConfigBlock[] {
  const context = options.context ?? defaultSshConfigContext();
  const readFile = options.readFile ?? readConfigFile;
  const blocks: SshConfigBlock[] = [];
  parseInto(blocks, text, options.source ?? 'ssh config', context, readFile, 0, { patterns: ['*'] });
  return blocks;
}

function parseInto(
  blocks: SshConfigBlock[],
  text: string,
  source: string,
  context: SshConfigContext,
  readFile: (path: string) => string | undefined,
  depth: number,
  inherited: { patterns: string[] | undefined },
): void {
  // `undefined` patterns: inside a Match block, whose options are skipped.
  let current: SshConfigBlock | undefined;
  const startBlock = (patterns: string[] | undefined, line: number): void => {
    current = patterns === undefined ? undefined : { patterns, options: new Map(), source: `${source}:${line}` };
    if (current) blocks.push(current);
  };
  startBlock(inherited.patterns, 1);
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const match = /^(\S+?)(?:\s*=\s*|\s+)(.*)$/.exec(line);
    if (!match) return;
    const keyword = match[1]!.toLowerCase();
    const args = splitArgs(match[2]!);
    if (keyword === 'host') {
      startBlock(args, index + 1);
      inherited.patterns = args;
    } else if (keyword === 'match') {
      startBlock(undefined, index + 1);
      inherited.patterns = undefined;
    } else if (keyword === 'include') {
      if (depth >= MAX_INCLUDE_DEPTH) {
        throw new ValidationError(`${source}:${index + 1}: Include nested more than ${MAX_INCLUDE_DEPTH} deep`, {
          code: 'E_SSH_CONFIG',
        });
      }
      // An included file starts in the block it was included from, and that
      // block is current again after it, whatever Host lines it held.
      const including = inherited.patterns;
      for (const pattern of args) {
        for (const file of expandInclude(pattern, context)) {
          const included = readFile(file);
          if (included === undefined) continue;
          parseInto(blocks, included, file, context, readFile, depth + 1, { patterns: including });
        }
      }
      startBlock(including, index + 1);
    } else if (KEYWORDS.has(keyword) && current) {
      const values = current.options.get(keyword) ?? [];
      values.push(...(keyword === 'proxyjump' ? [args.join(' ')] : args.slice(0, 1)));
      current.options.set(keyword, values);
    }
  });
}

/** Splits arguments on whitespace, honouring double quotes. */
function splitArgs(text: string): string[] {
  const args: string[] = [];
  const pattern = /"([^"]*)"|(\S+)/g;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) args.push(match[1] ?? match[2]!);
  return args;
}

/** Files an Include pattern names: relative to ~/.ssh, with `*` and `?` in the last component. */
function expandInclude(pattern: string, context: SshConfigContext): string[] {
  let path = pattern.startsWith('~/') ? join(context.homeDir, pattern.slice(2)) : pattern;
  if (!isAbsolute(path)) path = join(context.homeDir, '.ssh', path);
  const name = basename(path);
  if (!/[*?]/.test(name)) return [path];
  try {
    return readdirSync(dirname(path))
      .filter((entry) => wildcardMatches(name, entry))
      .sort()
      .map((entry) => join(dirname(path), entry));
  } catch {
    return [];
  }
}

function readConfigFile(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Whether a block's patterns select `alias`: one pattern matches and no negated one does. */
export function blockMatches(patterns: string[], alias: string): boolean {
  let isMatched = false;
  for (const pattern of patterns) {
    const isNegated = pattern.startsWith('!');
    if (!wildcardMatches(isNegated ? pattern.slice(1) : pattern, alias)) continue;
    if (isNegated) return false;
    isMatched = true;
  }
  return isMatched;
}

/** What the configuration gives `alias`, with `~` and `%` tokens expanded. */
export function resolveSshConfig(
  blocks: SshConfigBlock[],
  alias: string,
  context: SshConfigContext = defaultSshConfigContext(),
): ResolvedSshConfig {
  const first = new Map<string, string>();
  const identityFiles: string[] = [];
  for (const block of blocks) {
    if (!blockMatches(block.patterns, alias)) continue;
    for (const [keyword, values] of block.options) {
      if (keyword === 'identityfile') identityFiles.push(...values);
      else if (!first.has(keyword) && values[0] !== undefined) first.set(keyword, values[0]);
    }
  }
  const hostNameRaw = first.get('hostname');
  const hostName = hostNameRaw === undefined ? undefined : expandTokens(hostNameRaw, { ...context, host: alias });
  const user = first.get('user');
  const portText = first.get('port');
  let port: number | undefined;
  if (portText !== undefined) {
    port = Number(portText);
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new ValidationError(`ssh config: invalid Port ${JSON.stringify(portText)} for ${alias}`, {
        code: 'E_SSH_CONFIG',
      });
    }
  }
  const jump = first.get('proxyjump');
  const tokens = { ...context, host: hostName ?? alias, remoteUser: user ?? context.localUser };
  return {
    hostName,
    user,
    port,
    identityFiles: identityFiles
      .filter((file) => file.toLowerCase() !== 'none')
      .map((file) => expandPath(file, tokens)),
    proxyJump:
      jump === undefined
        ? undefined
        : jump.toLowerCase() === 'none'
          ? []
          : jump
              .split(',')
              .map((hop) => hop.trim())
              .filter(Boolean),
  };
}

interface TokenContext extends SshConfigContext {
  host: string;
  remoteUser?: string;
}

/** Expands the `%` tokens ssh_config(5) defines that make sense here: %% %d %h %u %r. */
function expandTokens(value: string, context: TokenContext): string {
  return value.replace(/%([%dhur])/g, (_match, token: string) => {
    switch (token) {
      case '%':
        return '%';
      case 'd':
        return context.homeDir;
      case 'h':
        return context.host;
      case 'u':
        return context.localUser;
      default:
        return context.remoteUser ?? context.localUser;
    }
  });
}

function expandPath(value: string, context: TokenContext): string {
  const expanded = expandTokens(value, context);
  if (expanded === '~') return context.homeDir;
  if (expanded.startsWith('~/')) return join(context.homeDir, expanded.slice(2));
  return isAbsolute(expanded) ? expanded : join(context.homeDir, expanded);
}

/** Reads and parses a config file; a missing file is an empty configuration. */
export function loadSshConfig(file: string, context: SshConfigContext = defaultSshConfigContext()): SshConfigBlock[] {
  const text = readConfigFile(file);
  return text === undefined ? [] : parseSshConfig(text, { source: file, context });
}
