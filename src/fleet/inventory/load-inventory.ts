/**
 * Reading an inventory: detect the format (edgeadm's `kind: FleetInventory`,
 * an Ansible YAML inventory or an Ansible INI inventory), hand over to its
 * reader, and for Ansible read group_vars/ and host_vars/ beside the file as
 * Ansible's host_group_vars plugin does. What edgeadm does not run (inventory
 * scripts, inventory plugins, Ansible Vault) is refused with the way to turn
 * it into a file edgeadm reads.
 */
import { access, constants, readFile, readdir, stat } from 'node:fs/promises';
import { dirname, extname, join } from 'node:path';
import { ValidationError } from '../../errors.js';
import { resolveAnsibleInventory, type AnsibleVarsFile, type AnsibleVarsFiles } from './ansible-inventory.js';
import { loadAnsibleYaml } from './ansible-yaml.js';
import { looksLikeAnsibleInventory, readAnsibleYamlInventory } from './ansible-yaml-inventory.js';
import { EDGEADM_INVENTORY_KIND, parseEdgeadmInventory } from './edgeadm-inventory.js';
import { looksLikeIniInventory, readIniInventory } from './ini-inventory.js';
import { inventoryError, isMapping } from './inventory-error.js';
import { buildLineMap } from './line-map.js';
import type { FleetInventory } from './types.js';

/** File name endings Ansible reads as YAML (its YAML_FILENAME_EXTENSIONS). */
const YAML_EXTENSIONS = ['.yml', '.yaml', '.json'];

/** Most files read from group_vars/ and host_vars/ together. */
export const MAX_VARS_FILES = 10_000;

/** The way forward for what only Ansible can run. */
const WRITE_IT_OUT =
  'Write it out as a YAML inventory and pass that: ansible-inventory -i FILE --list --yaml --output inventory.yml';

/** Parses inventory text; `file` is only used in messages. Pure. */
export function parseInventory(text: string, file: string, varsFiles?: AnsibleVarsFiles): FleetInventory {
  if (text.startsWith('#!')) {
    throw new ValidationError(`${file}: is an inventory script, which edgeadm does not run`, {
      code: 'E_INVENTORY_SCRIPT',
      hints: [WRITE_IT_OUT],
      details: { file },
    });
  }
  const extension = extname(file).toLowerCase();
  const isYamlName = YAML_EXTENSIONS.includes(extension);
  if (!isYamlName && looksLikeIniInventory(text))
    return resolveAnsibleInventory(readIniInventory(text, file), varsFiles);
  let document: unknown;
  try {
    document = loadAnsibleYaml(text, file);
  } catch (error) {
    // Ansible tries the ini plugin after the yaml one for a name that may be either.
    if (isYamlName) throw error;
    return resolveAnsibleInventory(readIniInventory(text, file), varsFiles);
  }
  if (!isMapping(document) && !isYamlName && document !== null) {
    return resolveAnsibleInventory(readIniInventory(text, file), varsFiles);
  }
  const source = { file, lines: buildLineMap(text), text };
  if (
    isMapping(document) &&
    (document.kind === EDGEADM_INVENTORY_KIND || 'nodeGroups' in document || 'controlPlane' in document)
  ) {
    return parseEdgeadmInventory(document, source);
  }
  if (isMapping(document) && typeof document.plugin === 'string') {
    throw new ValidationError(
      `${file}: is the configuration of the Ansible inventory plugin ${document.plugin}, which edgeadm does not run`,
      { code: 'E_INVENTORY_PLUGIN', hints: [WRITE_IT_OUT], details: { file, plugin: document.plugin } },
    );
  }
  if (looksLikeAnsibleInventory(document))
    return resolveAnsibleInventory(readAnsibleYamlInventory(document, source), varsFiles);
  throw inventoryError(
    source,
    [],
    `is neither an edgeadm inventory (kind: ${EDGEADM_INVENTORY_KIND}) nor an Ansible inventory (YAML groups with hosts, vars, children, or INI)`,
  );
}

/** Reads and parses an inventory file, with group_vars/ and host_vars/ beside it. */
export async function loadInventory(file: string): Promise<FleetInventory> {
  let text: string;
  try {
    if ((await stat(file)).isDirectory()) {
      throw new ValidationError(`inventory ${file} is a directory; edgeadm reads one inventory file`, {
        code: 'E_INVENTORY_READ',
        hints: [
          'Pass the inventory file inside it (its group_vars/ and host_vars/ are read too),',
          'or merge the directory: ansible-inventory -i DIR --list --yaml --output inventory.yml',
        ],
      });
    }
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    const reason =
      (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'there is no such file' : (error as Error).message;
    throw new ValidationError(`cannot read inventory ${file}: ${reason}`, {
      code: 'E_INVENTORY_READ',
      cause: error,
      hints: [
        "Pass -i with an inventory file: edgeadm's YAML (kind: FleetInventory) or an Ansible inventory (YAML or INI).",
        '"edgeadm fleet up --help" shows a small inventory; docs/guides/fleet.md shows both formats.',
      ],
    });
  }
  if (await isExecutable(file)) {
    throw new ValidationError(
      `${file}: is executable, so Ansible would run it as an inventory script; edgeadm does not`,
      {
        code: 'E_INVENTORY_SCRIPT',
        hints: [WRITE_IT_OUT, 'If it is a plain inventory file, clear its executable bit: chmod -x FILE'],
        details: { file },
      },
    );
  }
  const base = dirname(file);
  const varsFiles: AnsibleVarsFiles = {
    groupVars: await readVarsDirectory(join(base, 'group_vars')),
    hostVars: await readVarsDirectory(join(base, 'host_vars')),
  };
  return parseInventory(text, file, varsFiles);
}

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The vars files of a group_vars/ or host_vars/ directory by entity name, as
 * Ansible's host_group_vars plugin finds them: for NAME the first of `NAME`,
 * `NAME.yml`, `NAME.yaml`, `NAME.json` that exists; a directory stands for
 * every file under it (sorted, recursively, hidden and `~` files skipped).
 */
export async function readVarsDirectory(directory: string): Promise<Map<string, AnsibleVarsFile[]>> {
  const result = new Map<string, AnsibleVarsFile[]>();
  let entries: string[];
  try {
    entries = (await readdir(directory)).sort();
  } catch {
    return result;
  }
  const names = new Set(
    entries.map((entry) => (YAML_EXTENSIONS.includes(extname(entry)) ? entry.slice(0, -extname(entry).length) : entry)),
  );
  let count = 0;
  for (const name of names) {
    for (const candidate of [name, ...YAML_EXTENSIONS.map((extension) => `${name}${extension}`)]) {
      if (!entries.includes(candidate)) continue;
      const path = join(directory, candidate);
      const files = (await stat(path)).isDirectory() ? await filesUnder(path) : [path];
      const parsed: AnsibleVarsFile[] = [];
      for (const vars of files) {
        if (++count > MAX_VARS_FILES) {
          throw new ValidationError(`${directory}: more than ${MAX_VARS_FILES} vars files`, {
            code: 'E_INVENTORY_READ',
          });
        }
        const text = await readFile(vars, 'utf8');
        parsed.push({ document: loadAnsibleYaml(text, vars), source: { file: vars, lines: buildLineMap(text), text } });
      }
      result.set(name, parsed);
      break;
    }
  }
  return result;
}

async function filesUnder(directory: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of (await readdir(directory)).sort()) {
    if (entry.startsWith('.') || entry.endsWith('~')) continue;
    const path = join(directory, entry);
    const extension = extname(entry);
    const info = await stat(path);
    if (info.isDirectory() && extension === '') found.push(...(await filesUnder(path)));
    else if (info.isFile() && (extension === '' || YAML_EXTENSIONS.includes(extension))) found.push(path);
  }
  return found;
}
