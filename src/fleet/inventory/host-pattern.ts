/**
 * Ansible host patterns as inventories write them: `web01`, `web01:2222`,
 * `[2001:db8::1]:2222`, and ranges `web[01:20]`, `db-[a:c]`, `n[1:9:2]`,
 * several in one name (`r[1:2]-n[1:3]`). The rules are Ansible's
 * (parsing/utils/addresses.py `parse_address` with ranges allowed, and
 * plugins/inventory `expand_hostname_range`): a trailing `:NN` is a port for
 * every host of the pattern, a range with a leading zero pads to its width,
 * a letter range runs over a-z then A-Z, and the step is optional.
 *
 * Pure: no I/O.
 */

/** Most hosts one pattern may expand to (a typo like `[1:100000]` should not eat memory). */
export const MAX_RANGE_HOSTS = 10_000;

/** What a host pattern stands for. */
export interface ExpandedHostPattern {
  hosts: string[];
  /** The `:NN` port written after the pattern, if any. */
  port: number | undefined;
}

/** Why a pattern could not be expanded (Ansible refuses these too). */
export class HostPatternError extends Error {}

const RANGE = String.raw`\[(?:[a-z]:[a-z]|[0-9]+:[0-9]+)(?::[0-9]+)?\]`;
const HEX_RANGE = String.raw`\[(?:[0-9a-f]+:[0-9a-f]+)(?::[0-9]+)?\]`;
const NUMERIC_RANGE = String.raw`\[[0-9]+:[0-9]+(?::[0-9]+)?\]`;
const IPV4_PART = String.raw`(?:[01]?[0-9]{1,2}|2[0-4][0-9]|25[0-5]|${NUMERIC_RANGE})`;
const IPV6_PART = String.raw`(?:[0-9a-f]{1,4}|${HEX_RANGE})`;
const LABEL = String.raw`(?:[\p{L}\p{N}_]|${RANGE})(?:[\p{L}\p{N}_-]|${RANGE})*(?<![_-])`;
const IPV4 = new RegExp(String.raw`^(?:${IPV4_PART}\.){3}${IPV4_PART}$`, 'iu');
const IPV6 = new RegExp(
  '^(?:' +
    [
      `(?:${IPV6_PART}:){7}${IPV6_PART}`,
      `(?:${IPV6_PART}:){1,6}:`,
      `(?:${IPV6_PART}:)(?::${IPV6_PART}){1,6}`,
      `(?:${IPV6_PART}:){2}(?::${IPV6_PART}){1,5}`,
      `(?:${IPV6_PART}:){3}(?::${IPV6_PART}){1,4}`,
      `(?:${IPV6_PART}:){4}(?::${IPV6_PART}){1,3}`,
      `(?:${IPV6_PART}:){5}(?::${IPV6_PART}){1,2}`,
      `(?:${IPV6_PART}:){6}(?::${IPV6_PART})`,
      `:(?::${IPV6_PART}){1,6}`,
      `${IPV6_PART}?::`,
      `(?:0:){6}(?:${IPV6_PART}\\.){3}${IPV6_PART}`,
      `::(?:ffff:)?(?:${IPV6_PART}\\.){3}${IPV6_PART}`,
      `(?:0:){5}ffff:(?:${IPV6_PART}\\.){3}${IPV6_PART}`,
    ].join('|') +
    ')$',
  'i',
);
const HOST_NAME = new RegExp(String.raw`^${LABEL}(?:\.${LABEL})*$`, 'iu');
const BRACKETED_HOST_PORT = /^\[(.+)\]:([0-9]+)$/;
const HOST_PORT = /^((?:[^:[\]]|\[[^\]]*\])*):([0-9]+)$/;

/**
 * Splits `pattern` into host names and a port, as Ansible's inventory
 * plugins do: a pattern that is not an address with a port is taken whole.
 */
export function expandHostPattern(pattern: string): ExpandedHostPattern {
  let host = pattern;
  let port: number | undefined;
  for (const form of [BRACKETED_HOST_PORT, HOST_PORT]) {
    const match = form.exec(host);
    if (match) {
      host = match[1]!;
      port = Number(match[2]);
    }
  }
  if (!IPV4.test(host) && !IPV6.test(host) && !HOST_NAME.test(host)) {
    host = pattern;
    port = undefined;
  }
  const hosts = host.includes('[') ? expandRanges(host) : [host];
  return { hosts, port };
}

const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** Expands every `[begin:end[:step]]` in `name`, leftmost first (Ansible's order). */
function expandRanges(name: string): string[] {
  const open = name.indexOf('[');
  const close = name.indexOf(']', open);
  if (close === -1) throw new HostPatternError(`unclosed range in ${JSON.stringify(name)}`);
  const head = name.slice(0, open);
  const tail = name.slice(close + 1);
  const bounds = name.slice(open + 1, close).split(':');
  if (bounds.length !== 2 && bounds.length !== 3) {
    throw new HostPatternError('a host range must be begin:end or begin:end:step');
  }
  const begin = bounds[0] === '' ? '0' : bounds[0]!;
  const end = bounds[1]!;
  const stepText = bounds[2] ?? '1';
  if (end === '') throw new HostPatternError('a host range must give its end');
  if (!/^\d+$/.test(stepText) || Number(stepText) === 0)
    throw new HostPatternError('a host range step must be a positive number');
  const step = Number(stepText);
  const width = begin.startsWith('0') && begin.length > 1 ? begin.length : 0;
  if (width > 0 && width !== end.length) {
    throw new HostPatternError('a host range must write its begin and end with the same number of digits');
  }
  let items: string[];
  // Python's `ascii_letters.index`, which also finds a longer substring.
  const letterBegin = LETTERS.indexOf(begin);
  const letterEnd = LETTERS.indexOf(end);
  if (letterBegin !== -1 && letterEnd !== -1) {
    if (letterBegin > letterEnd) throw new HostPatternError('a host range must have begin <= end');
    items = [];
    for (let index = letterBegin; index <= letterEnd; index += step) items.push(LETTERS[index]!);
  } else {
    if (!/^\d+$/.test(begin) || !/^\d+$/.test(end)) {
      throw new HostPatternError(`${JSON.stringify(`[${bounds.join(':')}]`)} is neither a number nor a letter range`);
    }
    const first = Number(begin);
    const last = Number(end);
    if ((last - first) / step >= MAX_RANGE_HOSTS) {
      throw new HostPatternError(`the range expands to more than ${MAX_RANGE_HOSTS} hosts`);
    }
    items = [];
    for (let value = first; value <= last; value += step) items.push(String(value).padStart(width, '0'));
  }
  const hosts: string[] = [];
  for (const item of items) {
    const expanded = `${head}${item}${tail}`;
    hosts.push(...(expanded.includes('[') ? expandRanges(expanded) : [expanded]));
    if (hosts.length > MAX_RANGE_HOSTS)
      throw new HostPatternError(`the pattern expands to more than ${MAX_RANGE_HOSTS} hosts`);
  }
  return hosts;
}
