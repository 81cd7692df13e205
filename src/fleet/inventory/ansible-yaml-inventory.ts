/**
 * Ansible YAML inventories, read as Ansible's yaml inventory plugin reads
 * them: top-level groups (under `all` or not), each with `hosts`, `vars` and
 * `children` handled in the order they are written, host patterns with
 * ranges and ports (`web[01:20]:2222`), and a host's variables set on the
 * host itself, whichever group lists it.
 *
 * Pure: no I/O.
 */
import { checkHostName } from './host-fields.js';
import { HostPatternError, expandHostPattern } from './host-pattern.js';
import { AnsibleInventoryBuilder, MAX_GROUP_NESTING } from './ansible-inventory.js';
import { inventoryError, isMapping, type InventorySource } from './inventory-error.js';

const GROUP_KEYS = new Set(['hosts', 'vars', 'children']);

/** True when a document looks like an Ansible inventory (groups of hosts/vars/children). */
export function looksLikeAnsibleInventory(document: unknown): boolean {
  if (!isMapping(document)) return false;
  const groups = Object.values(document);
  return (
    groups.length > 0 &&
    groups.every((group) => group === null || (isMapping(group) && Object.keys(group).every((k) => GROUP_KEYS.has(k))))
  );
}

/** Fills a builder from an Ansible YAML inventory document (already loaded as YAML 1.1). */
export function readAnsibleYamlInventory(document: unknown, source: InventorySource): AnsibleInventoryBuilder {
  if (!isMapping(document)) throw inventoryError(source, [], 'expected a mapping of groups at the top level');
  const builder = new AnsibleInventoryBuilder(source);
  const walk = (name: string, body: unknown, path: string[], depth: number): void => {
    if (depth > MAX_GROUP_NESTING) throw inventoryError(source, path, 'groups nest too deeply (a children loop?)');
    checkHostName(name, 'group', path, source);
    builder.addGroup(name, path, source);
    if (body === null || body === undefined) return;
    if (!isMapping(body)) throw inventoryError(source, path, 'expected a group: a mapping of hosts, vars and children');
    for (const [key, rawSection] of Object.entries(body)) {
      const sectionPath = [...path, key];
      if (!GROUP_KEYS.has(key))
        throw inventoryError(source, sectionPath, 'unknown field (expected hosts, vars or children)');
      // Ansible takes a lone name for a mapping with one empty entry.
      const section = typeof rawSection === 'string' ? { [rawSection]: null } : rawSection;
      if (section === null || section === undefined) continue;
      if (!isMapping(section))
        throw inventoryError(source, sectionPath, `expected a mapping of ${key === 'vars' ? 'variables' : key}`);
      if (key === 'vars') {
        for (const [variable, value] of Object.entries(section)) {
          builder.setGroupVar(name, variable, { value, path: [...sectionPath, variable], source });
        }
      } else if (key === 'children') {
        for (const [child, childBody] of Object.entries(section)) {
          walk(child, childBody, [...sectionPath, child], depth + 1);
          builder.addChild(name, child, [...sectionPath, child], source);
        }
      } else {
        for (const [pattern, vars] of Object.entries(section)) {
          const hostPath = [...sectionPath, pattern];
          const expanded = expandPattern(pattern, hostPath, source);
          if (vars !== null && vars !== undefined && !isMapping(vars))
            throw inventoryError(source, hostPath, 'expected a mapping of host variables');
          for (const host of expanded.hosts) {
            checkHostName(host, 'host', hostPath, source);
            builder.addHost(host, name, expanded.port, hostPath, source);
            for (const [variable, value] of Object.entries(vars ?? {})) {
              builder.setHostVar(host, variable, { value, path: [...hostPath, variable], source });
            }
          }
        }
      }
    }
  };
  for (const [name, body] of Object.entries(document)) walk(name, body, [name], 0);
  return builder;
}

/** Expands a host pattern, turning a bad range into an error at its line. */
export function expandPattern(
  pattern: string,
  path: string[],
  source: InventorySource,
): ReturnType<typeof expandHostPattern> {
  try {
    return expandHostPattern(pattern);
  } catch (error) {
    if (error instanceof HostPatternError) {
      throw inventoryError(source, path, `host pattern ${JSON.stringify(pattern)}: ${error.message}`, [
        'Ranges are written [01:20], [a:f] or [1:9:2]: begin, end and an optional step.',
      ]);
    }
    throw error;
  }
}
