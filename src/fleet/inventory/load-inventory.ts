/**
 * Reading an inventory file: parse the YAML, keep the line of every key for
 * error messages, detect the format (edgeadm's `kind: FleetInventory` or an
 * Ansible group tree) and hand over to its parser.
 */
import { readFile } from 'node:fs/promises';
import { load } from 'js-yaml';
import { ValidationError } from '../../errors.js';
import { looksLikeAnsibleInventory, parseAnsibleInventory } from './ansible-inventory.js';
import { EDGEADM_INVENTORY_KIND, parseEdgeadmInventory } from './edgeadm-inventory.js';
import { inventoryError, isMapping } from './inventory-error.js';
import { buildLineMap } from './line-map.js';
import type { FleetInventory } from './types.js';

/** Parses inventory text; `file` is only used in messages. Pure. */
export function parseInventory(text: string, file: string): FleetInventory {
  let document: unknown;
  try {
    document = load(text, { filename: file });
  } catch (error) {
    const mark = (error as { mark?: { line?: number } }).mark;
    const line = mark?.line === undefined ? '' : `:${mark.line + 1}`;
    throw new ValidationError(
      `${file}${line}: not valid YAML: ${(error as { reason?: string }).reason ?? String(error)}`,
      {
        code: 'E_INVENTORY',
        cause: error,
        details: { file, ...(mark?.line === undefined ? {} : { line: mark.line + 1 }) },
      },
    );
  }
  const source = { file, lines: buildLineMap(text) };
  if (
    isMapping(document) &&
    (document.kind === EDGEADM_INVENTORY_KIND || 'nodeGroups' in document || 'controlPlane' in document)
  ) {
    return parseEdgeadmInventory(document, source);
  }
  if (looksLikeAnsibleInventory(document)) return parseAnsibleInventory(document, source);
  throw inventoryError(
    source,
    [],
    `is neither an edgeadm inventory (kind: ${EDGEADM_INVENTORY_KIND}) nor an Ansible YAML inventory (groups with hosts, vars, children)`,
  );
}

/** Reads and parses an inventory file. */
export async function loadInventory(file: string): Promise<FleetInventory> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'there is no such file' : (error as Error).message;
    throw new ValidationError(`cannot read inventory ${file}: ${reason}`, {
      code: 'E_INVENTORY_READ',
      cause: error,
      hints: [
        "Pass -i with an inventory file: edgeadm's YAML (kind: FleetInventory) or an Ansible YAML inventory.",
        '"edgeadm fleet up --help" shows a small inventory; docs/guides/fleet.md shows both formats.',
      ],
    });
  }
  return parseInventory(text, file);
}
