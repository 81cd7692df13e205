/**
 * `--limit`: which hosts of the inventory a run acts on. A comma-separated
 * list of host names, group names or `*` globs over host names; a leading
 * `!` excludes. Exclusions alone mean "everything but".
 */
import { ValidationError } from '../../errors.js';
import type { FleetHost } from './types.js';

/** The hosts `limit` selects, in inventory order; throws when it selects none. */
export function limitHosts(hosts: FleetHost[], limit: string | undefined): FleetHost[] {
  if (limit === undefined || limit.trim() === '') return hosts;
  const terms = limit
    .split(',')
    .map((term) => term.trim())
    .filter((term) => term !== '');
  const includes = terms.filter((term) => !term.startsWith('!'));
  const excludes = terms.filter((term) => term.startsWith('!')).map((term) => term.slice(1));
  const matches = (host: FleetHost, term: string): boolean =>
    term === 'all' || host.groups.includes(term) || globToRegExp(term).test(host.name) || host.address === term;
  const selected = hosts.filter(
    (host) =>
      (includes.length === 0 || includes.some((term) => matches(host, term))) &&
      !excludes.some((term) => matches(host, term)),
  );
  if (selected.length === 0) {
    throw new ValidationError(`--limit ${limit} matches no host of the inventory`, {
      code: 'E_FLEET_LIMIT',
      hints: ['Name hosts, groups or globs such as store-*; separate them with commas, exclude with !.'],
    });
  }
  return selected;
}

function globToRegExp(glob: string): RegExp {
  const escaped = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${escaped}$`);
}
