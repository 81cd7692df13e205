import { describe, expect, it } from 'vitest';
import type { ValidationError } from '../../../../src/errors.js';
import { buildLineMap } from '../../../../src/fleet/inventory/line-map.js';
import { parseInventory } from '../../../../src/fleet/inventory/load-inventory.js';
import { loadAnsibleYaml } from '../../../../src/fleet/inventory/ansible-yaml.js';
import type { AnsibleVarsFiles } from '../../../../src/fleet/inventory/ansible-inventory.js';

const host = (text: string, name: string, file = 'inv.yml', vars?: AnsibleVarsFiles) =>
  parseInventory(text, file, vars).hosts.find((candidate) => candidate.name === name)!;

function failure(text: string, file = 'inv.yml'): ValidationError {
  try {
    parseInventory(text, file);
  } catch (error) {
    return error as ValidationError;
  }
  throw new Error('expected a refusal');
}

function varsFile(name: string, text: string) {
  return { document: loadAnsibleYaml(text, name), source: { file: name, lines: buildLineMap(text), text } };
}

describe('Ansible variable precedence, as ansible-inventory resolves it', () => {
  it('keeps the host variable written last when a host is listed in several groups', () => {
    const text =
      'deep:\n  children:\n    deeper:\n      hosts:\n        h1: { ansible_user: a }\nshallow:\n  hosts:\n    h1: { ansible_user: b }\n';
    expect(host(text, 'h1').ssh.user).toBe('b');
  });
  it('orders groups of one depth by ansible_group_priority, then by name as Python compares text', () => {
    const byName =
      'b:\n  vars: { ansible_user: from_b }\n  hosts: { h1: }\nB:\n  vars: { ansible_user: from_B }\n  hosts: { h1: }\n';
    // "B" < "b" by code point: b is applied last and wins (localeCompare would say otherwise).
    expect(host(byName, 'h1').ssh.user).toBe('from_b');
    const byPriority = byName.replace(
      'vars: { ansible_user: from_B }',
      'vars: { ansible_user: from_B, ansible_group_priority: 10 }',
    );
    expect(host(byPriority, 'h1').ssh.user).toBe('from_B');
  });
  it('prefers ansible_ssh_host, ansible_ssh_port and ansible_ssh_user to the plain names, as the ssh plugin does', () => {
    const text =
      'all:\n  hosts:\n    h1:\n      ansible_host: 10.0.0.1\n      ansible_ssh_host: 10.0.0.2\n      ansible_port: 22\n      ansible_ssh_port: 2222\n      ansible_ssh_user: root\n      ansible_user: deploy\n';
    expect(host(text, 'h1')).toMatchObject({ address: '10.0.0.2', ssh: { port: 2222, user: 'root' } });
  });
  it('reads YAML 1.1: 02222 is octal (1170), as Ansible connects to it, and says so', () => {
    const inventory = parseInventory('all:\n  hosts:\n    h1:\n      ansible_port: 02222\n', 'inv.yml');
    expect(inventory.hosts[0]!.ssh.port).toBe(1170);
    expect(inventory.warnings).toEqual([
      expect.stringMatching(/ansible_port: 02222 is the octal number 1170 in YAML 1\.1/),
    ]);
  });
  it('applies YAML merge keys, explicit keys winning', () => {
    const text =
      'a:\n  vars: &base\n    ansible_user: root\n    ansible_port: 2200\n  hosts:\n    h1:\n      <<: *base\n      ansible_port: 2222\n';
    expect(host(text, 'h1').ssh).toMatchObject({ user: 'root', port: 2222 });
  });
  it('reads group_vars/ and host_vars/: group_vars/all over inventory group vars, host_vars over everything', () => {
    const text =
      'web:\n  vars: { ansible_user: inventory, ansible_port: 2200 }\n  hosts: { h1: { ansible_host: 10.0.0.1 } }\n';
    const vars: AnsibleVarsFiles = {
      groupVars: new Map([
        ['all', [varsFile('group_vars/all', 'ansible_user: all_file\nansible_port: 2201\n')]],
        ['web', [varsFile('group_vars/web.yml', 'ansible_port: 2202\n')]],
      ]),
      hostVars: new Map([['h1', [varsFile('host_vars/h1.yml', 'ansible_host: 10.0.0.9\n')]]]),
    };
    expect(host(text, 'h1', 'inv.yml', vars)).toMatchObject({
      address: '10.0.0.9',
      ssh: { user: 'all_file', port: 2202 },
    });
  });
  it('warns about an ansible_* name Ansible does not know, and does not use it', () => {
    const inventory = parseInventory('all:\n  hosts:\n    h1:\n      ansible_hosts: 10.0.0.1\n', 'inv.yml');
    expect(inventory.hosts[0]!.address).toBe('h1');
    expect(inventory.warnings).toEqual([
      expect.stringMatching(
        /^inv\.yml:4: all\.hosts\.h1\.ansible_hosts: ansible_hosts is not a variable Ansible knows.*did you mean ansible_host\?/,
      ),
    ]);
  });
});

describe('what edgeadm refuses, naming the feature and the way forward', () => {
  it('Jinja templates in a variable edgeadm uses (and only there)', () => {
    const error = failure("all:\n  hosts:\n    h1:\n      ansible_host: \"{{ lookup('env', 'IP') }}\"\n");
    expect(error.message).toMatch(/ansible_host: holds a Jinja template/);
    expect(error.hints.join(' ')).toMatch(/Write the value itself/);
    expect(parseInventory('all:\n  vars: { motd: "{{ x }}" }\n  hosts: { h1: }\n', 'i.yml').hosts).toHaveLength(1);
  });
  it('Ansible Vault values and files', () => {
    const error = failure(
      'all:\n  hosts:\n    h1:\n      ansible_user: !vault |\n        $ANSIBLE_VAULT;1.1;AES256\n        6162\n',
    );
    expect(error.code).toBe('E_INVENTORY_VAULT');
    expect(error.hints.join(' ')).toMatch(/ansible-inventory -i FILE --list --yaml/);
    expect(failure('$ANSIBLE_VAULT;1.1;AES256\n6162\n').code).toBe('E_INVENTORY_VAULT');
  });
  it('inventory scripts and inventory plugins', () => {
    const script = failure('#!/usr/bin/env python3\nprint("{}")\n', 'inventory.py');
    expect(script.code).toBe('E_INVENTORY_SCRIPT');
    expect(script.hints[0]).toMatch(/ansible-inventory -i FILE --list --yaml --output inventory\.yml/);
    const plugin = failure('plugin: amazon.aws.aws_ec2\nregions: [eu-west-1]\n', 'aws_ec2.yml');
    expect(plugin.code).toBe('E_INVENTORY_PLUGIN');
    expect(plugin.message).toMatch(/inventory plugin amazon\.aws\.aws_ec2/);
  });
  it('a bad host range, with its line', () => {
    expect(failure('all:\n  hosts:\n    "w[01:3]":\n').message).toMatch(/^inv\.yml:3: .*same number of digits/);
  });
});
