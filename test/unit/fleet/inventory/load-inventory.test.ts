import { describe, expect, it } from 'vitest';
import { parseInventory } from '../../../../src/fleet/inventory/load-inventory.js';
import { limitHosts } from '../../../../src/fleet/inventory/limit.js';
import { parseSshArgs } from '../../../../src/fleet/inventory/ansible-inventory.js';
import type { ValidationError } from '../../../../src/errors.js';

const EDGEADM = `kind: FleetInventory
package: ./pkg.tar.zst
ssh:
  user: root
  keyFile: /keys/fleet
  jump: root@10.9.0.1
controlPlane:
  hosts:
    cp1:
      address: 10.0.0.10
nodeGroups:
  stores:
    edge: true
    labels:
      tier: store
    ssh:
      port: 2222
    hosts:
      store-1:
        address: 10.1.0.1
        labels:
          city: lyon
      store-2:
        address: 10.1.0.2
        ssh:
          user: admin
          become: true
`;

const ANSIBLE = `all:
  vars:
    ansible_user: root
    ansible_ssh_private_key_file: /keys/fleet
    ansible_ssh_common_args: -J root@10.9.0.1
    edgeadm_package: ./pkg.tar.zst
  children:
    control_plane:
      hosts:
        cp1:
          ansible_host: 10.0.0.10
    stores:
      vars:
        ansible_port: 2222
        edgeadm_edge: yes
        edgeadm_labels:
          tier: store
      hosts:
        store-1:
          ansible_host: 10.1.0.1
          edgeadm_labels:
            tier: store
            city: lyon
        store-2:
          ansible_host: 10.1.0.2
          ansible_user: admin
          ansible_become: true
`;

function failure(text: string): ValidationError {
  try {
    parseInventory(text, 'inv.yaml');
  } catch (error) {
    return error as ValidationError;
  }
  throw new Error('expected the inventory to be refused');
}

describe('parseInventory', () => {
  it('reads an edgeadm inventory with settings inherited top → group → host', () => {
    const inventory = parseInventory(EDGEADM, 'inv.yaml');
    expect(inventory.format).toBe('edgeadm');
    expect(inventory.hosts.map((h) => h.name)).toEqual(['cp1', 'store-1', 'store-2']);
    const [cp1, store1, store2] = inventory.hosts;
    expect(cp1).toMatchObject({ role: 'control-plane', address: '10.0.0.10', isEdge: false });
    expect(cp1!.ssh).toEqual({ user: 'root', keyFile: '/keys/fleet', jumps: ['root@10.9.0.1'] });
    expect(store1).toMatchObject({ role: 'worker', isEdge: true, groups: ['stores'], packagePath: './pkg.tar.zst' });
    expect(store1!.labels).toEqual({ tier: 'store', city: 'lyon' });
    expect(store2!.ssh).toEqual({
      user: 'admin',
      port: 2222,
      keyFile: '/keys/fleet',
      jumps: ['root@10.9.0.1'],
      become: true,
    });
  });

  it('resolves an equivalent Ansible inventory to the same hosts', () => {
    const fromEdgeadm = parseInventory(EDGEADM, 'a.yaml').hosts;
    const fromAnsible = parseInventory(ANSIBLE, 'b.yaml');
    expect(fromAnsible.format).toBe('ansible');
    const comparable = (hosts: typeof fromEdgeadm) =>
      hosts.map(({ name, address, ssh, role, labels, isEdge, packagePath }) => ({
        name,
        address,
        ssh,
        role,
        labels,
        isEdge,
        packagePath,
      }));
    expect(comparable(fromAnsible.hosts)).toEqual(comparable(fromEdgeadm));
  });

  it('applies Ansible precedence: host over child group over parent group over all', () => {
    const inventory = parseInventory(
      `all:
  vars: { ansible_port: 1001, ansible_user: a }
  children:
    parent:
      vars: { ansible_port: 1002, ansible_user: p }
      children:
        child:
          vars: { ansible_port: 1003 }
          hosts:
            h1: { ansible_port: 1004 }
            h2:
    other:
      hosts:
        h3:
`,
      'inv.yaml',
    );
    const byName = Object.fromEntries(inventory.hosts.map((h) => [h.name, h]));
    expect(byName.h1!.ssh).toEqual({ port: 1004, user: 'p' });
    expect(byName.h2!.ssh).toEqual({ port: 1003, user: 'p' });
    expect(byName.h3!.ssh).toEqual({ port: 1001, user: 'a' });
    expect(byName.h2!.groups.sort()).toEqual(['child', 'parent']);
    expect(byName.h2!.address).toBe('h2');
  });

  it('reads top-level groups without all, and ProxyJump in -o form', () => {
    const inventory = parseInventory(
      `stores:
  vars:
    ansible_ssh_common_args: "-o ProxyJump=ops@b1,ops@b2 -o StrictHostKeyChecking=no"
  hosts:
    s1:
`,
      'inv.yaml',
    );
    expect(inventory.hosts[0]!.ssh.jumps).toEqual(['ops@b1', 'ops@b2']);
    expect(inventory.warnings[0]).toMatch(/^inv\.yaml:3: stores\.vars\.ansible_ssh_common_args: ignored ssh options/);
  });

  it('names the file, the line and the field of an invalid value', () => {
    const error = failure(`all:
  hosts:
    h1:
      ansible_host: 10.0.0.1
      ansible_port: seventy
`);
    expect(error.code).toBe('E_INVENTORY');
    expect(error.message).toBe('inv.yaml:5: all.hosts.h1.ansible_port: expected a port number between 1 and 65535');
    expect(error.details).toMatchObject({ file: 'inv.yaml', line: 5, field: 'all.hosts.h1.ansible_port' });
  });

  it('names the line of an unknown field in an edgeadm inventory', () => {
    const error = failure(EDGEADM.replace('      port: 2222', '      prot: 2222'));
    expect(error.message).toMatch(/^inv\.yaml:17: nodeGroups\.stores\.ssh\.prot: unknown field/);
  });

  it('refuses Jinja templates and duplicate edgeadm hosts with their lines', () => {
    expect(failure(`all:\n  vars:\n    ansible_user: "{{ user }}"\n  hosts:\n    h1:\n`).message).toMatch(
      /^inv\.yaml:3: all\.vars\.ansible_user: templates/,
    );
    const duplicate = `kind: FleetInventory\ncontrolPlane:\n  hosts:\n    a:\nnodeGroups:\n  g:\n    hosts:\n      a:\n`;
    expect(failure(duplicate).message).toMatch(/^inv\.yaml:8: nodeGroups\.g\.hosts\.a: host a is already listed/);
  });

  it('reads several control-plane hosts and their endpoint from an edgeadm inventory', () => {
    const inventory = parseInventory(
      EDGEADM.replace(
        'controlPlane:\n  hosts:\n',
        'controlPlane:\n  endpoint: k8s.example.internal:6443\n  hosts:\n    cp0: { address: 10.0.0.9 }\n',
      ).replace('      address: 10.0.0.10\n', '      address: 10.0.0.10\n    cp2: { address: 10.0.0.11 }\n'),
      'inv.yaml',
    );
    expect(inventory.hosts.map((host) => [host.name, host.role])).toEqual([
      ['cp0', 'control-plane'],
      ['cp1', 'control-plane'],
      ['cp2', 'control-plane'],
      ['store-1', 'worker'],
      ['store-2', 'worker'],
    ]);
    expect(inventory.controlPlaneEndpoint).toBe('k8s.example.internal:6443');
    expect(inventory.controlPlaneEndpointLocation).toEqual({
      file: 'inv.yaml',
      line: 8,
      field: 'controlPlane.endpoint',
    });
    // Without one: where it belongs, for fleet up's error.
    const without = parseInventory(EDGEADM, 'inv.yaml');
    expect(without.controlPlaneEndpoint).toBeUndefined();
    expect(without.controlPlaneEndpointLocation).toEqual({ file: 'inv.yaml', line: 7, field: 'controlPlane.endpoint' });
  });

  it('reads control_plane_endpoint from the control-plane group, all, or the hosts of an Ansible inventory', () => {
    const threeMasters = (vars: string, hostVar = '') =>
      `all:\n${vars}  children:\n    kube_control_plane:\n      hosts:\n        m1:${hostVar}\n        m2:\n        m3:\n    nodes:\n      hosts:\n        n1:\n`;
    const inGroup = parseInventory(
      threeMasters('').replace(
        '    kube_control_plane:\n',
        '    kube_control_plane:\n      vars:\n        control_plane_endpoint: 10.0.0.100\n',
      ),
      'hosts.yml',
    );
    expect(inGroup.hosts.filter((h) => h.role === 'control-plane').map((h) => h.name)).toEqual(['m1', 'm2', 'm3']);
    expect(inGroup.controlPlaneEndpoint).toBe('10.0.0.100');
    expect(inGroup.controlPlaneEndpointLocation).toEqual({
      file: 'hosts.yml',
      line: 5,
      field: 'all.children.kube_control_plane.vars.control_plane_endpoint',
    });
    const inAll = parseInventory(threeMasters('  vars:\n    control_plane_endpoint: "[fd00::10]:6443"\n'), 'hosts.yml');
    expect(inAll.controlPlaneEndpoint).toBe('[fd00::10]:6443');
    // A node's value is not the control planes' business.
    const onNode = parseInventory(
      threeMasters('').replace('        n1:\n', '        n1: { control_plane_endpoint: x }\n'),
      'h.yml',
    );
    expect(onNode.controlPlaneEndpoint).toBeUndefined();
    // Control planes that disagree: both values are named, and where the differing one is written.
    const differ = failure(
      threeMasters('  vars:\n    control_plane_endpoint: lb1\n', ' { control_plane_endpoint: lb2 }'),
    );
    expect(differ.message).toBe(
      'inv.yaml:3: all.vars.control_plane_endpoint: m2 has control-plane endpoint lb1, m1 has lb2: the control planes share one',
    );
  });

  it('refuses a control-plane endpoint that is not host or host:port, with its line', () => {
    const withEndpoint = (value: string) =>
      EDGEADM.replace('controlPlane:\n  hosts:\n', `controlPlane:\n  endpoint: ${value}\n  hosts:\n`);
    expect(failure(withEndpoint('https://lb:6443')).message).toBe(
      'inv.yaml:8: controlPlane.endpoint: expected host or host:port without a scheme, not https://lb:6443',
    );
    expect(failure(withEndpoint('"fd00::10"')).message).toMatch(
      /^inv\.yaml:8: controlPlane\.endpoint: .*IPv6 address goes in brackets/,
    );
    expect(failure(withEndpoint('lb:99999')).message).toMatch(/port 99999 is not between 1 and 65535/);
    expect(failure(withEndpoint('a b')).message).toMatch(/expected host or host:port, not a b/);
    expect(failure(EDGEADM.replace('  stores:\n', '  stores:\n    endpoint: lb\n')).message).toMatch(
      /^inv\.yaml:\d+: nodeGroups\.stores\.endpoint: unknown field/,
    );
  });

  it('reports YAML syntax errors with their line, and unknown formats', () => {
    expect(failure('all:\n  hosts: [\n').message).toMatch(/^inv\.yaml:3: not valid YAML/);
    expect(failure('- a\n- b\n').message).toMatch(/^inv\.yaml: inventory: is neither an edgeadm inventory/);
  });
});

describe('parseSshArgs', () => {
  it('finds -J in both spellings', () => {
    expect(parseSshArgs('-J root@b:2222').jumps).toEqual(['root@b:2222']);
    expect(parseSshArgs('-Jroot@b').jumps).toEqual(['root@b']);
    expect(parseSshArgs('-oProxyJump=x').jumps).toEqual(['x']);
  });
});

describe('limitHosts', () => {
  const hosts = parseInventory(EDGEADM, 'inv.yaml').hosts;
  it('selects by group, glob and name, with exclusions', () => {
    expect(limitHosts(hosts, 'stores').map((h) => h.name)).toEqual(['store-1', 'store-2']);
    expect(limitHosts(hosts, 'cp*,store-2').map((h) => h.name)).toEqual(['cp1', 'store-2']);
    expect(limitHosts(hosts, '!store-1').map((h) => h.name)).toEqual(['cp1', 'store-2']);
    expect(limitHosts(hosts, undefined)).toHaveLength(3);
  });
  it('refuses a limit that selects nothing', () => {
    expect(() => limitHosts(hosts, 'nope')).toThrow(/matches no host/);
  });
});
