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
    expect(error.message).toBe(
      'inv.yaml:5: all.hosts.h1.ansible_port: expected a port number between 1 and 65535, found "seventy"',
    );
    expect(error.details).toMatchObject({ file: 'inv.yaml', line: 5, field: 'all.hosts.h1.ansible_port' });
  });

  it('reads the package signing keys an edgeadm inventory pins (one inventory per environment), and refuses a non-list', () => {
    const pinned = parseInventory(
      [
        'kind: FleetInventory',
        'trustedKeys: [./prod-signing.pub, ./prod-signing-2026.pub]',
        'controlPlane:',
        '  hosts:',
        '    cp: { address: 10.0.0.10 }',
      ].join('\n'),
      'prod.yaml',
    );
    expect(pinned.trustedKeys).toEqual(['./prod-signing.pub', './prod-signing-2026.pub']);
    expect(parseInventory(EDGEADM, 'inv.yaml').trustedKeys).toBeUndefined();
    expect(() =>
      parseInventory(
        ['kind: FleetInventory', 'trustedKeys: ./one.pub', 'controlPlane:', '  hosts:', '    cp: {}'].join('\n'),
        'x.yaml',
      ),
    ).toThrow(/trustedKeys.*expected a list of public key files/);
  });

  it('names the line of an unknown field in an edgeadm inventory', () => {
    const error = failure(EDGEADM.replace('      port: 2222', '      prot: 2222'));
    expect(error.message).toMatch(/^inv\.yaml:17: nodeGroups\.stores\.ssh\.prot: unknown field/);
  });

  it('refuses Jinja templates and duplicate edgeadm hosts with their lines', () => {
    expect(failure(`all:\n  vars:\n    ansible_user: "{{ user }}"\n  hosts:\n    h1:\n`).message).toMatch(
      /^inv\.yaml:3: all\.vars\.ansible_user: holds a Jinja template/,
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

describe('inventory host fields: names, addresses, users, bastions and labels are checked', () => {
  const edgeadm = (host: string, body = '{ address: 10.0.0.1 }', extra = ''): string =>
    `kind: FleetInventory\n${extra}controlPlane:\n  hosts:\n    ${JSON.stringify(host)}: ${body}\n`;
  const ansible = (host: string, vars = 'ansible_host: 10.0.0.1', group = 'control_plane'): string =>
    `all:\n  children:\n    ${JSON.stringify(group)}:\n      hosts:\n        ${JSON.stringify(host)}:\n          ${vars}\n`;
  const refused: { name: string; text: string; message: RegExp }[] = [
    { name: 'a host name with a space', text: edgeadm('a b'), message: /hosts\.a b: host name "a b" is not valid/ },
    { name: 'a host name with a slash', text: edgeadm('a/b'), message: /host name "a\/b" is not valid/ },
    { name: 'a host name with a newline', text: edgeadm('a\nb'), message: /host name "a\\nb" is not valid/ },
    { name: 'a host name with a shell metacharacter', text: edgeadm('a;reboot'), message: /is not valid/ },
    { name: 'a host name that is a glob', text: edgeadm('store-*'), message: /is not valid/ },
    {
      name: 'an address with a newline',
      text: edgeadm('cp1', '{ address: "10.0.0.1\\nrm -rf /" }'),
      message: /cp1\.address: .*control character/,
    },
    {
      name: 'an address that is no address',
      text: edgeadm('cp1', '{ address: "$(reboot)" }'),
      message: /hosts\.cp1\.address: host cp1: address "\$\(reboot\)" is neither an IP address nor a DNS name/,
    },
    {
      name: 'a name that must be its address but is not one',
      text: edgeadm('cp_1', '{}'),
      message: /host cp_1: address "cp_1" is neither/,
    },
    {
      name: 'an SSH user with a metacharacter',
      text: edgeadm('cp1', '{ address: 10.0.0.1, ssh: { user: "root;id" } }'),
      message: /hosts\.cp1\.ssh\.user: SSH user "root;id" is not a POSIX user name/,
    },
    {
      name: 'an SSH user starting with a dash',
      text: edgeadm('cp1', '{ address: 10.0.0.1, ssh: { user: "-oProxyCommand=x" } }'),
      message: /is not a POSIX user name/,
    },
    {
      name: 'a bastion that is no [user@]host[:port]',
      text: edgeadm('cp1', '{ address: 10.0.0.1, ssh: { jump: "root@bastion -oProxyCommand=x" } }'),
      message: /bastion "root@bastion -oProxyCommand=x" is not/,
    },
    {
      name: 'a label key with a space',
      text: edgeadm('cp1', '{ address: 10.0.0.1, labels: { "a b": x } }'),
      message: /cp1\.labels: label key "a b" is not a Kubernetes label key/,
    },
    {
      name: 'a label value with a newline',
      text: edgeadm('cp1', '{ address: 10.0.0.1, labels: { tier: "a\\nb" } }'),
      message: /label "tier" has value "a\\nb"/,
    },
    {
      name: 'a group label value too long',
      text: `kind: FleetInventory\nnodeGroups:\n  stores:\n    labels: { tier: ${'x'.repeat(64)} }\n    hosts:\n      s1: { address: 10.0.0.1 }\n`,
      message: /nodeGroups\.stores\.labels: label "tier" has value/,
    },
    {
      name: 'a group name with a space',
      text: `kind: FleetInventory\nnodeGroups:\n  "my stores":\n    hosts:\n      s1: { address: 10.0.0.1 }\n`,
      message: /group name "my stores" is not valid/,
    },
    { name: 'an Ansible host name with a space', text: ansible('a b'), message: /host name "a b" is not valid/ },
    { name: 'an Ansible host name with a slash', text: ansible('a/b'), message: /host name "a\/b" is not valid/ },
    { name: 'an Ansible group name with a space', text: ansible('cp1', undefined, 'my group'), message: /group name/ },
    {
      name: 'an Ansible address with a shell metacharacter',
      text: ansible('cp1', 'ansible_host: "10.0.0.1;reboot"'),
      message: /ansible_host: host cp1: address "10\.0\.0\.1;reboot" is neither/,
    },
    {
      name: 'an Ansible user with a newline',
      text: ansible('cp1', 'ansible_user: "root\\nx"'),
      message: /ansible_user: .*control character/,
    },
    {
      name: 'an Ansible user with a space',
      text: ansible('cp1', 'ansible_user: "a b"'),
      message: /ansible_user: host cp1: SSH user "a b" is not a POSIX user name/,
    },
    {
      name: 'an Ansible bastion that is no host',
      text: ansible('cp1', 'ansible_ssh_common_args: "-J root@$(id)"'),
      message: /host cp1: bastion "root@\$\(id\)" is not/,
    },
    {
      name: 'Ansible labels that are not Kubernetes labels',
      text: ansible('cp1', 'edgeadm_labels: { "a/b/c": x }'),
      message: /edgeadm_labels: host cp1: label key "a\/b\/c"/,
    },
  ];
  for (const entry of refused) {
    it(`refuses ${entry.name}, naming the host and the field`, () => {
      let error: ValidationError | undefined;
      try {
        parseInventory(entry.text, 'fleet.yaml');
      } catch (caught) {
        error = caught as ValidationError;
      }
      expect(error?.code, entry.text).toBe('E_INVENTORY');
      expect(error?.message).toMatch(/^fleet\.yaml(:\d+)?: /);
      expect(error?.message).toMatch(entry.message);
    });
  }

  it('accepts DNS names, IPv4 and IPv6 addresses, Ansible-style names with an address, and label prefixes', () => {
    const text = [
      'kind: FleetInventory',
      'ssh: { user: deploy.user_1, jump: "ops@[2001:db8::9]:2222" }',
      'controlPlane:',
      '  hosts:',
      '    cp1.example.com: {}',
      '    cp_2: { address: "2001:db8::2" }',
      '    10.0.0.3: { labels: { example.com/tier: store, empty: "" } }',
    ].join('\n');
    const inventory = parseInventory(text, 'fleet.yaml');
    expect(inventory.hosts.map((host) => [host.name, host.address])).toEqual([
      ['cp1.example.com', 'cp1.example.com'],
      ['cp_2', '2001:db8::2'],
      ['10.0.0.3', '10.0.0.3'],
    ]);
    expect(parseInventory(ansible('store_001', 'ansible_host: store-001.example.com'), 'f').hosts[0]).toMatchObject({
      name: 'store_001',
      address: 'store-001.example.com',
    });
  });
});
