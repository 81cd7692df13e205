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
  /** The YAML text, when a reader wants to see how a value was written (octal ports). */
  text?: string;
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
  return new ValidationError(`${where}: ${field === '' ? 'inventory' : shownField(field)}: ${message}`, {
    code: 'E_INVENTORY',
    hints,
    details: { file, ...(line === undefined ? {} : { line }), field },
  });
}

/** "where" text for a warning. */
export function fieldLocation(source: InventorySource, path: string[]): string {
  const line = lineOf(source.lines, path);
  return `${line === undefined ? source.file : `${source.file}:${line}`}: ${shownField(path.join('.'))}`;
}

/**
 * A field path as shown in a message: as written, or quoted (escapes and
 * all) when a key in it holds a control character, so that an invalid host
 * name with a newline cannot split the error it causes.
 */
function shownField(field: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what must not reach the output raw
  return /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(field) ? JSON.stringify(field) : field;
}

/** True for a plain object (a YAML mapping). */
export function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
