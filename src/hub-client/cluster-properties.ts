/**
 * `hub clusters set-properties NAME KEY=VALUE…`: the properties an operator
 * sets on a cluster, which a Rollout's customization reads as
 * `${property:KEY}` (rollout/render.ts). Pure.
 */
import { ValidationError } from '../errors.js';

/** A property key: what `${property:KEY}` can name (no `|` or `}`); the hub checks the same. */
const PROPERTY_KEY = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,252}$/;
/** Longest property value. */
const MAX_PROPERTY_VALUE_LENGTH = 4096;

/**
 * Parses `KEY=VALUE` arguments (a value may be empty and may hold `=`).
 *
 * @throws {ValidationError} `E_CLUSTER_PROPERTY_INVALID`, naming the argument.
 */
export function parsePropertyAssignments(args: readonly string[]): Record<string, string> {
  const invalid = (why: string): ValidationError =>
    new ValidationError(why, {
      code: 'E_CLUSTER_PROPERTY_INVALID',
      hints: ['Write each property as KEY=VALUE, for example: tag=1.4.2 opening-hours=08-20'],
    });
  if (args.length === 0) throw invalid('no properties given');
  const properties: Record<string, string> = {};
  for (const arg of args) {
    const at = arg.indexOf('=');
    if (at === -1) throw invalid(`"${arg}" is not KEY=VALUE`);
    const key = arg.slice(0, at);
    const value = arg.slice(at + 1);
    if (!PROPERTY_KEY.test(key)) {
      throw invalid(`"${key}" is not a property key (letters, digits, ".", "_", "/" and "-", at most 253)`);
    }
    if (Object.hasOwn(properties, key)) throw invalid(`property "${key}" is given twice`);
    if (value.length > MAX_PROPERTY_VALUE_LENGTH) {
      throw invalid(`the value of "${key}" is longer than ${MAX_PROPERTY_VALUE_LENGTH} characters`);
    }
    properties[key] = value;
  }
  return properties;
}
