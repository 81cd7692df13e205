import { describe, expect, it } from 'vitest';
import type { ValidationError } from '../../../../src/errors.js';
import { parseInventory } from '../../../../src/fleet/inventory/load-inventory.js';
import { shellWords } from '../../../../src/fleet/inventory/ini-inventory.js';

const INI = `# ungrouped before any section
lone ansible_host=10.0.0.9
[control_plane]
cp1 ansible_host=10.0.0.10
[stores]
store-[01:03] ansible_user=deploy
store-04:2200 ansible_host="10.1.0.4"  # a comment
[stores:vars]
ansible_port=2222
edgeadm_edge=True
[edge:children]
stores
`;

function failure(text: string): ValidationError {
  try {
    parseInventory(text, 'hosts.ini');
  } catch (error) {
    return error as ValidationError;
  }
  throw new Error('expected a refusal');
}

describe('Ansible INI inventories', () => {
  it('reads hosts, ranges, ports, :vars and :children as Ansible does', () => {
    const inventory = parseInventory(INI, 'hosts.ini');
    expect(inventory.format).toBe('ansible');
    const byName = Object.fromEntries(inventory.hosts.map((host) => [host.name, host]));
    expect(Object.keys(byName)).toEqual(['cp1', 'lone', 'store-01', 'store-02', 'store-03', 'store-04']);
    expect(byName['cp1']).toMatchObject({ role: 'control-plane', address: '10.0.0.10' });
    expect(byName['store-02']).toMatchObject({
      address: 'store-02',
      ssh: { user: 'deploy', port: 2222 },
      groups: ['edge', 'stores'],
      isEdge: true,
    });
    // The host's own port (from store-04:2200) is a host variable: it wins over [stores:vars].
    expect(byName['store-04']).toMatchObject({ address: '10.1.0.4', ssh: { port: 2200 } });
    expect(byName['lone']).toMatchObject({ address: '10.0.0.9', groups: [] });
  });
  it('reads a leading-zero port on a host line as the text Python leaves it, in base 10', () => {
    expect(parseInventory('[g]\nh1 ansible_port=02222\n', 'hosts').hosts[0]!.ssh.port).toBe(2222);
  });
  it('lets a :children or :vars section come before the group it names', () => {
    const inventory = parseInventory('[all:children]\nweb\n[web:vars]\nansible_user=ops\n[web]\nw1\n', 'hosts');
    expect(inventory.hosts[0]).toMatchObject({ name: 'w1', ssh: { user: 'ops' }, groups: ['web'] });
  });
  it('refuses a section for a group that is never defined, naming the line', () => {
    expect(failure('[web]\nw1\n[db:vars]\nx=1\n').message).toMatch(
      /^hosts\.ini:3: .*\[db:vars\] is for a group that is never defined/,
    );
    expect(failure('[web:children]\ndb\n[web]\nw1\n').message).toMatch(/names group db, which is never defined/);
  });
  it('refuses what Ansible refuses: unknown section types, bad sections, key without =', () => {
    expect(failure('[web:hosts2]\nw1\n').message).toMatch(/unknown type/);
    expect(failure('[web]\nw1 ansible_port\n').message).toMatch(/expected key=value/);
    expect(failure('[web]\nw1\n[web:vars]\nnovalue\n').message).toMatch(/expected key=value/);
  });
});

describe('shellWords: host lines split as shlex.split(comments=True)', () => {
  const fail = (): never => {
    throw new Error('unbalanced');
  };
  it('removes quotes, honours backslashes and stops at #', () => {
    expect(shellWords(`h1 a="x y" b='p q' c=d\\ e f=g#h`, fail)).toEqual(['h1', 'a=x y', 'b=p q', 'c=d e', 'f=g']);
    expect(shellWords(`h1 a="q\\"r" b=''`, fail)).toEqual(['h1', 'a=q"r', 'b=']);
    expect(() => shellWords(`h1 a="open`, fail)).toThrow('unbalanced');
  });
});
