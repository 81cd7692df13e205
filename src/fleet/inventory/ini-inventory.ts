/**
 * Ansible INI inventories, read as Ansible's ini inventory plugin reads them
 * (plugins/inventory/ini.py, ansible-core 2.14):
 *
 * ```ini
 * web01 ansible_host=10.0.0.1        # before any section: ungrouped
 * [web]
 * web[02:04] ansible_user=deploy     # a range, with host variables
 * [web:vars]
 * ansible_port=2222
 * [edge:children]
 * web
 * ```
 *
 * Lines are trimmed and those starting with `#` or `;` skipped. A host line
 * is split as a POSIX shell would (quotes, backslashes, `#` comments); its
 * first word is a host pattern and the rest `key=value`. A `[group:vars]`
 * line is `key=value` taken whole (a `#` there is part of the value). Every
 * value goes through Python's literal_eval ({@link pythonLiteral}). A
 * `:children` or `:vars` section may come before the group it names, which
 * must then be defined somewhere in the file.
 *
 * Pure: no I/O.
 */
import { checkHostName } from './host-fields.js';
import { AnsibleInventoryBuilder } from './ansible-inventory.js';
import { expandPattern } from './ansible-yaml-inventory.js';
import { inventoryError, type InventorySource } from './inventory-error.js';
import { pythonLiteral } from './python-literal.js';

const SECTION = /^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?$/;
const GROUP_NAME = /^([^:\]\s]+)\s*(?:#.*)?$/;

/** Heuristic used before any parse: an INI inventory opens with a section or a `host key=value` line. */
export function looksLikeIniInventory(text: string): boolean {
  const first = text.split(/\r?\n/).find((line) => !/^\s*([#;].*)?$/.test(line));
  return first !== undefined && SECTION.test(first.trim());
}

/**
 * Fills a builder from INI text. The paths it records (`web.hosts.web01`,
 * `web.vars.ansible_port`) are mapped to their lines in `source.lines`,
 * which the caller passes empty and this function fills.
 */
export function readIniInventory(text: string, file: string): AnsibleInventoryBuilder {
  const lines = new Map<string, number>();
  const source: InventorySource = { file, lines };
  const builder = new AnsibleInventoryBuilder(source);
  const at = (path: string[], line: number): string[] => {
    const key = path.join('.');
    if (!lines.has(key)) lines.set(key, line);
    return path;
  };
  const fail = (line: number, message: string, hints: string[] = []): never => {
    throw inventoryError(source, at([`line ${line}`], line), message, hints);
  };
  /** Sections that named a group before it was defined: `vars` or `children` (with the parents waiting). */
  const pending = new Map<string, { line: number; state: 'vars' | 'children'; parents: string[] }>();
  const addPendingChildren = (group: string): void => {
    for (const parent of pending.get(group)!.parents) {
      builder.addChild(parent, group, [parent, 'children', group], source);
      if (pending.get(parent)?.state === 'children') addPendingChildren(parent);
    }
    pending.delete(group);
  };
  let group = 'ungrouped';
  let state = 'hosts';
  text.split(/\r?\n/).forEach((raw, index) => {
    const lineNumber = index + 1;
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) return;
    const section = SECTION.exec(line);
    if (section) {
      group = section[1]!;
      state = section[2] ?? 'hosts';
      if (!['hosts', 'children', 'vars'].includes(state)) {
        fail(
          lineNumber,
          `section [${group}:${state}] has an unknown type: use [${group}], [${group}:vars] or [${group}:children]`,
        );
      }
      checkHostName(group, 'group', at([group], lineNumber), source);
      if (!builder.groups.has(group)) {
        if (state === 'vars' && !pending.has(group))
          pending.set(group, { line: lineNumber, state: 'vars', parents: [] });
        builder.addGroup(group, [group], source);
      }
      const waiting = pending.get(group);
      if (waiting !== undefined && state !== 'vars') {
        if (waiting.state === 'children') addPendingChildren(group);
        else pending.delete(group);
      }
      return;
    }
    if (line.startsWith('[') && line.endsWith(']')) {
      fail(
        lineNumber,
        `invalid section ${line}: a section is [group], [group:vars] or [group:children], with no spaces`,
      );
    }
    if (state === 'hosts') {
      const words = shellWords(line, () => fail(lineNumber, 'unbalanced quotes in a host line'));
      const pattern = words[0]!;
      const path = at([group, 'hosts', pattern], lineNumber);
      const expanded = expandPattern(pattern, path, source);
      if (pattern.trim().endsWith(':') && expanded.port === undefined) {
        fail(lineNumber, `host pattern ${JSON.stringify(pattern)} ends in ':', which Ansible keeps for a port`);
      }
      const vars: [string, unknown][] = [];
      for (const word of words.slice(1)) {
        const equals = word.indexOf('=');
        if (equals === -1) fail(lineNumber, `expected key=value after the host, found ${JSON.stringify(word)}`);
        vars.push([word.slice(0, equals), pythonLiteral(word.slice(equals + 1))]);
      }
      for (const host of expanded.hosts) {
        checkHostName(host, 'host', path, source);
        builder.addHost(host, group, expanded.port, path, source);
        for (const [key, value] of vars)
          builder.setHostVar(host, key, { value, path: at([...path, key], lineNumber), source });
      }
    } else if (state === 'vars') {
      const equals = line.indexOf('=');
      if (equals === -1) fail(lineNumber, `expected key=value in [${group}:vars], found ${JSON.stringify(line)}`);
      const key = line.slice(0, equals).trim();
      const value = pythonLiteral(line.slice(equals + 1).trim());
      builder.setGroupVar(group, key, { value, path: at([group, 'vars', key], lineNumber), source });
    } else {
      const child = GROUP_NAME.exec(line)?.[1];
      if (child === undefined)
        fail(lineNumber, `expected a group name in [${group}:children], found ${JSON.stringify(line)}`);
      const path = at([group, 'children', child!], lineNumber);
      checkHostName(child!, 'group', path, source);
      if (!builder.groups.has(child!)) {
        const waiting = pending.get(child!);
        if (waiting === undefined) pending.set(child!, { line: lineNumber, state: 'children', parents: [group] });
        else waiting.parents.push(group);
      } else builder.addChild(group, child!, path, source);
    }
  });
  for (const [name, waiting] of pending) {
    const message =
      waiting.state === 'vars'
        ? `[${name}:vars] is for a group that is never defined`
        : `[${waiting.parents.at(-1)}:children] names group ${name}, which is never defined`;
    fail(waiting.line, message, [`Add a [${name}] section (it may be empty).`]);
  }
  return builder;
}

/**
 * Splits a line as Python's shlex.split(line, comments=True) does: POSIX
 * quoting, backslash escapes (not inside single quotes), `#` starting a
 * comment wherever a word may continue.
 */
export function shellWords(line: string, onUnbalanced: () => never): string[] {
  const words: string[] = [];
  let word = '';
  let isInWord = false;
  for (let index = 0; index < line.length; index++) {
    const char = line[index]!;
    if (/\s/.test(char)) {
      if (isInWord) words.push(word);
      word = '';
      isInWord = false;
    } else if (char === '#') {
      break;
    } else if (char === '\\') {
      isInWord = true;
      if (index + 1 < line.length) word += line[++index];
    } else if (char === "'" || char === '"') {
      isInWord = true;
      const close = char;
      index++;
      for (;;) {
        if (index >= line.length) onUnbalanced();
        const inner = line[index]!;
        if (inner === close) break;
        if (close === '"' && inner === '\\' && (line[index + 1] === '"' || line[index + 1] === '\\')) {
          word += line[index + 1];
          index += 2;
          continue;
        }
        word += inner;
        index++;
      }
    } else {
      isInWord = true;
      word += char;
    }
  }
  if (isInWord) words.push(word);
  return words;
}
