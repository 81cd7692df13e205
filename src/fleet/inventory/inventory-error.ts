/**
 * Inventory validation errors: each names the file, the line and the field,
 * so that an operator with a 300-host file goes straight to the mistake.
 */
import { ValidationError } from '../../errors.js';
import { lineOf, type LineMap } from './line-map.js';
import type { InventoryLocation } from './types.js';

/** What a parser needs to point at a field. */
export interface InventorySource {
  file: string;
  lines: LineMap;
}

/** A {@link ValidationError} (`E_INVENTORY`) for the field at `path`. */
export function inventoryError(
  source: InventorySource,
  path: string[],
  message: string,
  hints: string[] = [],
): ValidationError {
  return locatedInventoryError(locationOf(source, path), message, hints);
}

/** Where the field at `path` is written (its nearest written ancestor's line). */
export function locationOf(source: InventorySource, path: string[]): InventoryLocation {
  const line = lineOf(source.lines, path);
  return { file: source.file, ...(line === undefined ? {} : { line }), field: path.join('.') };
}

/** A {@link ValidationError} (`E_INVENTORY`) for a field found after parsing (a command's own rule). */
export function locatedInventoryError(
  location: InventoryLocation,
  message: string,
  hints: string[] = [],
): ValidationError {
  const { file, line, field } = location;
  const where = line === undefined ? file : `${file}:${line}`;
  return new ValidationError(`${where}: ${field === '' ? 'inventory' : field}: ${message}`, {
    code: 'E_INVENTORY',
    hints,
    details: { file, ...(line === undefined ? {} : { line }), field },
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
