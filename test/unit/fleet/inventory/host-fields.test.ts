/**
 * Generated inventories against the host-field rules: whatever a host is
 * called and whatever its fields hold, the parser either refuses the
 * inventory (E_INVENTORY, one line of message) or yields hosts whose names,
 * addresses, users and labels are safe for file names, output lines, SSH and
 * Kubernetes; and no two host names ever share a log file.
 */
import { isIP } from 'node:net';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ValidationError } from '../../../../src/errors.js';
import { isValidAddress, isValidHostName, isValidSshUser } from '../../../../src/fleet/inventory/host-fields.js';
import { parseInventory } from '../../../../src/fleet/inventory/load-inventory.js';
import { hostLogPath } from '../../../../src/fleet/run-state.js';
import { isLabelKey, isLabelValue } from '../../../../src/kube/names.js';

/** Strings an attacker or a typo might write: metacharacters, separators, unicode, and plain names. */
const hostile = fc.oneof(
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
  fc.stringMatching(/^[a-z0-9][-a-z0-9._ /:;$`'"\\\n\t*?!,@[\]]{0,10}$/),
  fc.constantFrom('a b', 'a_b', 'a/b', 'a\nb', '..', '.', '-x', 'store-1', '10.0.0.1', '::1', 'x'.repeat(254)),
);

// eslint-disable-next-line no-control-regex -- a message must hold no control character
const SAFE_LINE = /^[^\u0000-\u001f\u007f]*$/;

function parsed(text: string): ReturnType<typeof parseInventory> | ValidationError {
  try {
    return parseInventory(text, 'fleet.yaml');
  } catch (error) {
    return error as ValidationError;
  }
}

describe('inventory host fields, generated', () => {
  it('either refuses an inventory in one line, or gives only safe names, addresses, users and labels', () => {
    fc.assert(
      fc.property(
        hostile,
        hostile,
        hostile,
        hostile,
        hostile,
        fc.boolean(),
        (name, address, user, key, value, isAnsible) => {
          const q = (text: string): string => JSON.stringify(text);
          const text = isAnsible
            ? `all:\n  hosts:\n    ${q(name)}:\n      ansible_host: ${q(address)}\n      ansible_user: ${q(user)}\n      edgeadm_labels: { ${q(key)}: ${q(value)} }\n`
            : `kind: FleetInventory\ncontrolPlane:\n  hosts:\n    ${q(name)}:\n      address: ${q(address)}\n      ssh: { user: ${q(user)} }\n      labels: { ${q(key)}: ${q(value)} }\n`;
          const result = parsed(text);
          if (result instanceof Error) {
            expect(result.code).toBe('E_INVENTORY');
            expect(result.message).toMatch(SAFE_LINE);
            return;
          }
          for (const host of result.hosts) {
            expect(isValidHostName(host.name)).toBe(true);
            expect(isValidAddress(host.address) || isIP(host.address) !== 0).toBe(true);
            if (host.ssh.user !== undefined) expect(isValidSshUser(host.ssh.user)).toBe(true);
            for (const [k, v] of Object.entries(host.labels)) expect(isLabelKey(k) && isLabelValue(v)).toBe(true);
            expect(hostLogPath('/run', host.name)).toBe(join('/run', 'hosts', `${host.name}.log`));
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('never gives two distinct host names one log file, nor a path outside hosts/', () => {
    fc.assert(
      fc.property(fc.uniqueArray(hostile, { minLength: 2, maxLength: 20 }), (names) => {
        const paths = names.map((name) => hostLogPath('/run', name));
        expect(new Set(paths).size).toBe(names.length);
        for (const path of paths) expect(path.startsWith('/run/hosts/') && !path.slice(11).includes('/')).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
