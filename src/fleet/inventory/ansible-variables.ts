/**
 * The `ansible_*` variable names Ansible knows, so that a typo such as
 * `ansible_hosts` is reported instead of silently leaving the host to be
 * reached by its inventory name.
 *
 * The list holds the connection, privilege escalation and interpreter
 * variables of ansible-core and its ssh, paramiko, local, winrm, psrp and
 * network plugins; families that belong to other connection plugins
 * (`ansible_winrm_*`, `ansible_httpapi_*`, …) are accepted by prefix.
 *
 * Pure: no I/O.
 */

const KNOWN = new Set([
  'ansible_host',
  'ansible_port',
  'ansible_user',
  'ansible_password',
  'ansible_connection',
  'ansible_ssh_host',
  'ansible_ssh_port',
  'ansible_ssh_user',
  'ansible_ssh_pass',
  'ansible_ssh_password',
  'ansible_ssh_private_key_file',
  'ansible_private_key_file',
  'ansible_ssh_common_args',
  'ansible_ssh_extra_args',
  'ansible_sftp_extra_args',
  'ansible_scp_extra_args',
  'ansible_ssh_args',
  'ansible_ssh_executable',
  'ansible_ssh_pipelining',
  'ansible_pipelining',
  'ansible_ssh_timeout',
  'ansible_timeout',
  'ansible_ssh_retries',
  'ansible_ssh_host_key_checking',
  'ansible_host_key_checking',
  'ansible_ssh_transfer_method',
  'ansible_scp_if_ssh',
  'ansible_sftp_batch_mode',
  'ansible_ssh_use_tty',
  'ansible_control_path',
  'ansible_control_path_dir',
  'ansible_ssh_control_path',
  'ansible_ssh_control_path_dir',
  'ansible_password_prompt',
  'ansible_become',
  'ansible_become_method',
  'ansible_become_user',
  'ansible_become_password',
  'ansible_become_pass',
  'ansible_become_exe',
  'ansible_become_flags',
  'ansible_sudo',
  'ansible_sudo_pass',
  'ansible_sudo_user',
  'ansible_su',
  'ansible_su_pass',
  'ansible_su_user',
  'ansible_shell_type',
  'ansible_shell_executable',
  'ansible_remote_tmp',
  'ansible_async_dir',
  'ansible_group_priority',
  'ansible_network_os',
  'ansible_python_interpreter',
  'ansible_facts',
  'ansible_play_hosts',
  'ansible_limit',
  'ansible_check_mode',
  'ansible_diff_mode',
  'ansible_verbosity',
  'ansible_connection_timeout',
  'ansible_command_timeout',
  'ansible_persistent_command_timeout',
  'ansible_persistent_connect_timeout',
  'ansible_persistent_log_messages',
  'ansible_module_compression',
  'ansible_keep_remote_files',
  'ansible_common_remote_group',
  'ansible_host_key_auto_add',
  'ansible_domain',
]);

/** Plugin families whose variables are theirs to define. */
const KNOWN_PREFIXES = [
  'ansible_winrm_',
  'ansible_psrp_',
  'ansible_httpapi_',
  'ansible_netconf_',
  'ansible_paramiko_',
  'ansible_libssh_',
  'ansible_docker_',
  'ansible_podman_',
  'ansible_kubectl_',
  'ansible_lxd_',
  'ansible_chroot_',
  'ansible_jail_',
  'ansible_zone_',
  'ansible_aws_ssm_',
  'ansible_network_',
  'ansible_become_',
  'ansible_local_',
];

/**
 * A warning for `name` when it looks like an Ansible variable Ansible does not
 * know, with the nearest known name; undefined for every other name.
 */
export function unknownAnsibleVariable(name: string): string | undefined {
  if (!name.startsWith('ansible_') || KNOWN.has(name)) return undefined;
  if (/^ansible_\w+_interpreter$/.test(name)) return undefined;
  if (KNOWN_PREFIXES.some((prefix) => name.startsWith(prefix))) return undefined;
  const nearest = [...KNOWN]
    .map((known) => ({ known, distance: editDistance(name, known) }))
    .sort((a, b) => a.distance - b.distance)[0]!;
  const guess = nearest.distance <= 3 ? ` (did you mean ${nearest.known}?)` : '';
  return `${name} is not a variable Ansible knows, so edgeadm does not use it${guess}`;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
