/**
 * The commands edgeadm will have but does not have yet. Each is registered
 * as a placeholder (see not-built.ts) so that `--help` shows the whole tool
 * and scripts get a clear "not built yet" (exit 3) instead of "unknown
 * command". When a command is built, its entry moves out of this table and
 * into a file under src/commands.
 */
import type { PlannedCommand } from './not-built.js';

const sshFlags = '--host root@10.0.0.10 --ssh-jump ops@bastion.example.com';

/** Planned command id (oclif's `topic:command` form) to its help. */
export const PLANNED_COMMANDS: Record<string, PlannedCommand> = {
  init: {
    summary: 'Bootstrap a lightweight control plane (k3s or kubeadm) from an offline install package.',
    examples: [
      '<%= config.bin %> init --install-pkg-path ./edge-k3s-v1.30-amd64.tar.gz',
      `<%= config.bin %> init ${sshFlags} --install-pkg-path ./pkg.tar.gz --enable-edge`,
      '<%= config.bin %> init --dry-run',
    ],
  },
  join: {
    summary: "Join this host (or --host) to a cluster with kubeadm's token and CA pin trust model.",
    examples: [
      '<%= config.bin %> join 10.0.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:<hash>',
    ],
  },
  reset: {
    summary: 'Undo init or join: stop services and remove everything edgeadm wrote.',
    examples: ['<%= config.bin %> reset --dry-run', `<%= config.bin %> reset ${sshFlags} --force`],
  },
  'token:create': {
    summary: 'Create a bootstrap token on the cluster.',
    examples: ['<%= config.bin %> token create --ttl 2h --print-join-command'],
  },
  'token:list': {
    summary: 'List the bootstrap tokens of the cluster.',
    examples: ['<%= config.bin %> token list --json'],
  },
  'token:delete': { summary: 'Delete a bootstrap token.', examples: ['<%= config.bin %> token delete abcdef'] },
  'config:print': {
    summary: 'Print a default init or join configuration (init-defaults | join-defaults).',
    examples: ['<%= config.bin %> config print init-defaults > edgeadm.yaml'],
  },
  'hub:serve': {
    summary: 'Run the cloud hub: operator API, agent tunnel endpoint and kube proxy on one HTTPS port.',
    examples: ['<%= config.bin %> hub serve --listen 0.0.0.0:9443 --data-dir /var/lib/edgeadm-hub'],
  },
  'hub:token:create': {
    summary: 'Create a hub token and print the register-cloud command.',
    examples: ['<%= config.bin %> hub token create --ttl 1h'],
  },
  'hub:clusters:list': {
    summary: 'List the clusters registered with the hub.',
    examples: ['<%= config.bin %> hub clusters list --selector env=prod --json'],
  },
  'hub:clusters:get': {
    summary: 'Show one registered cluster.',
    examples: ['<%= config.bin %> hub clusters get store-042'],
  },
  'hub:clusters:delete': {
    summary: 'Delete a cluster: revoke its certificate and close its tunnel.',
    examples: ['<%= config.bin %> hub clusters delete store-042'],
  },
  'hub:user:create': {
    summary: 'Create a hub user limited to the clusters a selector matches.',
    examples: ['<%= config.bin %> hub user create alice --clusters-selector env=dev --output alice.yaml'],
  },
  'register-cloud': {
    summary: 'Register this edge cluster with a cloud hub, reached outbound only.',
    examples: [
      '<%= config.bin %> register-cloud hub.example.com:9443 --token abcdef.0123456789abcdef --hub-ca-cert-hash sha256:<hash> --name store-042',
    ],
  },
  kubeconfig: {
    summary: 'Print a kubeconfig that reaches a registered cluster through the hub.',
    examples: ['<%= config.bin %> kubeconfig --cluster store-042 > store-042.yaml'],
  },
  kubectl: {
    summary: 'Run kubectl against a registered cluster through the hub.',
    examples: ['<%= config.bin %> kubectl --cluster store-042 -- get pods -A'],
  },
  'agent:edge-proxy': {
    summary: 'Run the edge-proxy: a caching API proxy that keeps an edge node working offline.',
    examples: [
      '<%= config.bin %> agent edge-proxy --kubeconfig /etc/edgeadm/upstream.yaml --listen 127.0.0.1:10261 --cache-dir /var/lib/edgeadm/cache',
    ],
  },
  'agent:tunnel': {
    summary: 'Run the hub tunnel agent installed by register-cloud.',
    examples: ['<%= config.bin %> agent tunnel --data-dir /var/lib/edgeadm/agent'],
  },
  'fleet:up': {
    summary: 'Bring up control planes and join every node of an inventory.',
    examples: ['<%= config.bin %> fleet up -i inventory.yaml --canary 2 --wave-size 20%'],
  },
  'fleet:join': {
    summary: 'Join every node of an inventory.',
    examples: ['<%= config.bin %> fleet join -i inventory.yaml'],
  },
  'fleet:reset': {
    summary: 'Reset every host of an inventory.',
    examples: ['<%= config.bin %> fleet reset -i inventory.yaml --limit stores'],
  },
  'fleet:check': {
    summary: 'Run host check on every host of an inventory.',
    examples: ['<%= config.bin %> fleet check -i inventory.yaml --json'],
  },
  'fleet:plan': {
    summary: 'Show what a fleet run would do, per host.',
    examples: ['<%= config.bin %> fleet plan -i inventory.yaml'],
  },
};
