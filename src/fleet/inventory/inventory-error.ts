/**
 * Inventory validation errors: each names the file, the line and the field,
 * so that an operator with a 300-host file goes straight to the mistake.
 */
import { ValidationError } from '../../errors.js';
import { lineOf, type LineMap } from './line-map.js';

/** What a parser needs to point at a field. */
export interface InventorySource {
  file: string;
  lines: LineMap;
}

/** A {@link ValidationError} (`E_INVENTORY`) for the field at `path`. */
export function inventoryError(source: InventorySource, path: string[], message: string): ValidationError {
  const line = lineOf(source.lines, path);
  const field = path.join('.');
  const where = line === undefined ? source.file : `${source.file}:${line}`;
  return new ValidationError(`${where}: ${field === '' ? 'inventory' : field}: ${message}`, {
    code: 'E_INVENTORY',
    details: { file: source.file, ...(line === undefined ? {} : { line }), field },
  });
}

/** "where" text for a warning. */
export function fieldLocation(source: InventorySource, path: string[]): string {
  const line = lineOf(source.lines, path);
  return `${line === undefined ? source.file : `${source.file}:${line}`}: ${path.join('.')}`;
}

/** True for a plain object (a YAML mapping). */
export function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
