/**
 * Opt-in: the main job against real hosts with real k3s. Skipped unless
 * EDGEADM_E2E_HOSTS and EDGEADM_E2E_PACKAGE are set (see README.md beside
 * it). Runs the CLI as an operator would, with systemd (no
 * EDGEADM_SERVICE_MANAGER override), and checks what the operator checks
 * afterwards: every node Ready at the package's Kubernetes version, a pod
 * running on every node, and after `reset` each host as it was before.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { printedBy } from '../support/run-output.js';

const hosts = (process.env.EDGEADM_E2E_HOSTS ?? '').split(',').filter(Boolean);
const pkg = process.env.EDGEADM_E2E_PACKAGE ?? '';
const key = process.env.EDGEADM_E2E_SSH_KEY;
/** Real k3s may take minutes to import its images and start on a small host. */
const E2E_TIMEOUT_MS = 15 * 60_000;
/** How long kubectl waits for a node to be Ready or a pod to finish (kubectl watches; it does not sleep). */
const KUBECTL_WAIT = '10m';
/**
 * What edgeadm and k3s write on a host, listed before `init`/`join` and after
 * `reset`: the two must be equal (paths, types and modes; not times).
 */
const INSTALL_DIRS = [
  '/etc/edgeadm',
  '/var/lib/edgeadm',
  '/usr/local/bin',
  '/etc/systemd/system',
  '/etc/rancher',
  '/var/lib/rancher',
  '/var/lib/kubelet',
  '/etc/cni',
  '/opt/cni',
];

const dir = mkdtempSync(join(tmpdir(), 'edgeadm-e2e-'));
const ssh = (host: string): string[] => ['--host', host, ...(key ? ['--ssh-key', key] : [])];

/** Runs a shell command on a host with the operator's ssh, the way the operator would look. */
async function onHost(host: string, command: string): Promise<string> {
  const result = await execa('ssh', ['-o', 'BatchMode=yes', ...(key ? ['-i', key] : []), host, command], {
    reject: false,
  });
  return result.stdout;
}

/** A host's state as `reset` must leave it: install directories, k3s units and processes. */
function hostState(host: string): Promise<string> {
  return onHost(
    host,
    [
      `find ${INSTALL_DIRS.join(' ')} -printf '%p %y %m\\n' 2>/dev/null | sort`,
      `echo '--- units'; systemctl list-unit-files 'k3s*' 'edgeadm*' --no-legend 2>/dev/null | sort`,
      `echo '--- processes'; pgrep -a 'k3s|containerd' | cut -d' ' -f2- | sort`,
      `echo '--- links'; ip -o link show 2>/dev/null | grep -E 'flannel|cni0' || true`,
    ].join('; '),
  );
}

/** kubectl from the operator's PATH against the cluster `init` wrote the kubeconfig of. */
async function kubectl(kubeconfig: string, args: string[], input?: string): Promise<string> {
  const result = await execa('kubectl', ['--kubeconfig', kubeconfig, ...args], {
    reject: false,
    ...(input === undefined ? {} : { input }),
  });
  expect(result.exitCode, `kubectl ${args.join(' ')}: ${result.stderr}`).toBe(0);
  return result.stdout;
}

interface NodeList {
  items: {
    metadata: { name: string };
    status: { nodeInfo: { kubeletVersion: string }; conditions: { type: string; status: string }[] };
  }[];
}

describe.skipIf(hosts.length < 2 || pkg === '')('main job on real hosts (EDGEADM_E2E_HOSTS)', () => {
  const kubeconfig = join(dir, 'admin.yaml');
  const before = new Map<string, string>();
  let kubernetesVersion = '';

  beforeAll(async () => {
    const inspected = await runCli(['package', 'inspect', pkg, '--json']);
    expect(inspected.exitCode, printedBy(inspected)).toBe(0);
    kubernetesVersion = (JSON.parse(inspected.stdout) as { kubernetesVersion: string }).kubernetesVersion;
    for (const host of hosts) before.set(host, await hostState(host));
  }, E2E_TIMEOUT_MS);

  afterAll(async () => {
    // A safety net when a test failed half-way; the reset test below is the one that checks.
    for (const host of hosts) await runCli(['reset', ...ssh(host), '--force'], { timeoutMs: E2E_TIMEOUT_MS });
  }, E2E_TIMEOUT_MS);

  it(
    'init and join: every node Ready at the package version',
    async () => {
      const init = await runCli(
        ['init', ...ssh(hosts[0]!), '--install-pkg-path', pkg, '--kubeconfig-out', kubeconfig, '--json'],
        { timeoutMs: E2E_TIMEOUT_MS },
      );
      expect(init.exitCode, printedBy(init)).toBe(0);
      const joinCommand = (JSON.parse(init.stdout) as { joinCommand: string }).joinCommand;
      for (const host of hosts.slice(1)) {
        const args = joinCommand.split(' ').slice(1);
        const run = await runCli([...args, ...ssh(host), '--json'], { timeoutMs: E2E_TIMEOUT_MS });
        expect(run.exitCode, printedBy(run)).toBe(0);
      }
      await kubectl(kubeconfig, ['wait', '--for=condition=Ready', 'node', '--all', `--timeout=${KUBECTL_WAIT}`]);
      const nodes = JSON.parse(await kubectl(kubeconfig, ['get', 'nodes', '-o', 'json'])) as NodeList;
      expect(nodes.items).toHaveLength(hosts.length);
      const release = kubernetesVersion.split('+')[0] as string;
      for (const node of nodes.items) {
        // k3s reports its own build suffix (v1.30.4+k3s1); the Kubernetes release is the package's.
        expect(node.status.nodeInfo.kubeletVersion.split('+')[0], node.metadata.name).toBe(release);
        expect(node.status.conditions.find((c) => c.type === 'Ready')?.status, node.metadata.name).toBe('True');
      }
      const list = await runCli(['token', 'list', '--kubeconfig', kubeconfig, '--json'], { timeoutMs: 60_000 });
      expect(list.exitCode, printedBy(list)).toBe(0);
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'runs a pod on every node, from the images the package brought (the hosts need no registry)',
    async () => {
      // CoreDNS's image comes with k3s's airgap images; `-version` prints and exits.
      const image = await kubectl(kubeconfig, [
        '-n',
        'kube-system',
        'get',
        'deployment',
        'coredns',
        '-o',
        'jsonpath={.spec.template.spec.containers[0].image}',
      ]);
      expect(image).not.toBe('');
      const nodes = JSON.parse(await kubectl(kubeconfig, ['get', 'nodes', '-o', 'json'])) as NodeList;
      for (const [index, node] of nodes.items.entries()) {
        const name = `edgeadm-e2e-probe-${index}`;
        const manifest = join(dir, `${name}.json`);
        writeFileSync(
          manifest,
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name, namespace: 'default' },
            spec: {
              nodeName: node.metadata.name,
              restartPolicy: 'Never',
              tolerations: [{ operator: 'Exists' }],
              containers: [{ name: 'probe', image, imagePullPolicy: 'Never', args: ['-version'] }],
            },
          }),
        );
        await kubectl(kubeconfig, ['apply', '-f', manifest]);
        await kubectl(kubeconfig, [
          'wait',
          '--for=jsonpath={.status.phase}=Succeeded',
          `pod/${name}`,
          `--timeout=${KUBECTL_WAIT}`,
        ]);
        expect(await kubectl(kubeconfig, ['logs', name])).toMatch(/CoreDNS-/);
        await kubectl(kubeconfig, ['delete', 'pod', name, '--wait=true']);
      }
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'reset leaves every host as it was before init and join',
    async () => {
      for (const host of [...hosts.slice(1), hosts[0]!]) {
        const reset = await runCli(['reset', ...ssh(host), '--force', '--json'], { timeoutMs: E2E_TIMEOUT_MS });
        expect(reset.exitCode, printedBy(reset)).toBe(0);
        expect(JSON.parse(reset.stdout)).toMatchObject({ hadState: true });
        expect(await hostState(host), host).toBe(before.get(host));
      }
    },
    E2E_TIMEOUT_MS,
  );
});
