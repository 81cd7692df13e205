/**
 * What one `fleet join` costs each host, counted in what the host is asked
 * to do, not in time: the facts script runs once per host (not once on
 * connect and again in preflight), the install package is hashed on the
 * host once (by the upload's own check, not again by the package phase),
 * and the whole join stays within a bound of commands. Every command is a
 * channel, a shell and a round trip on the host; on a busy fleet they add up.
 *
 * Test hosts with the SIMULATED k3s (test/support/sim-k3s, not k3s); the
 * join runs in this process so that the commands each SshHost runs can be
 * recorded. Hashing is counted on the host: a `sha256sum` wrapper first in
 * the host's PATH notes which file each run reads.
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { InitResult } from '../../../src/cluster/init.js';
import { hostPackagePaths } from '../../../src/cluster/package-phase.js';
import { fleetJoin, type FleetJoinOptions } from '../../../src/fleet/fleet-join.js';
import type { FleetHost } from '../../../src/fleet/inventory/types.js';
import { FACTS_SCRIPT } from '../../../src/hosts/facts.js';
import { SshHost } from '../../../src/hosts/ssh-host.js';
import { silentLogger } from '../../../src/log/run-log.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { clusterCli } from '../../support/cluster-cli.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import * as discovery from '../../../src/trust/discovery.js';
import { printedBy } from '../../support/run-output.js';
import { parseDiscoveryRequest } from '../../../src/trust/discovery.js';

vi.mock('../../../src/trust/discovery.js', { spy: true });

const CLI_TIMEOUT_MS = 150_000;
const TEST_TIMEOUT_MS = 300_000;
/**
 * Most commands one first join of a k3s worker (its package with binaries
 * and an airgap image) may run on its host. It took 58 before the install
 * state was saved in one command per save, facts were reused, the package
 * was hashed once, checks were folded into the commands they guard and the
 * agent's kubeconfig was waited for on the host; that made 27, then 32 with
 * five commands added on purpose (the unpacked package moved into place only
 * after its listing was compared with the manifest, the installed binary
 * hashed again, the kubelet's CA, certificate and key read by file), 38 with
 * an airgap image beside the binary. It is 22 since a phase's directories
 * are asked about, recorded and created together (not one by one), the
 * binaries and images are installed and hashed in one command, and the
 * node's kubeconfig is read by the command that waits for it and the files
 * it refers to by one more. It is 24 since the direct service manager (these
 * hosts have no systemd) writes the unit's launcher (its drop-ins and
 * environment merged as systemd merges them) and stops a launcher that may
 * be waiting to start a failing service before it starts the service: two
 * more for the one service a worker starts; a host with systemd runs neither.
 */
const MAX_COMMANDS_PER_FIRST_JOIN = 24;
/** The size of the package's airgap image archive. */
const AIRGAP_IMAGE_BYTES = 64 * 1024;
/** Where the `sha256sum` and `openssl` wrappers note what each run read (a tmpfs of the test host). */
const HASH_LOG = '/opt/sha256sum-reads.log';

let env: TestHosts;
let home: string;
let pkg: string;
let archive: string;

beforeAll(async () => {
  ensureCliBuilt('commands/init.js', ['src', 'test/support/sim-k3s']);
  env = await startTestHosts({ count: 3 });
  home = mkdtempSync(join(env.dir, 'fleet-commands-home-'));
  // With an airgap image, as the fleet benchmark's package: binaries and images are installed alike.
  const built = await buildSimK3sPackage(mkdtempSync(join(env.dir, 'pkg-')), { imageBytes: AIRGAP_IMAGE_BYTES });
  pkg = built.file;
  archive = hostPackagePaths(built.manifest.name).archive;
  for (const host of env.targets.slice(1)) {
    await env.run(
      host,
      [
        "cat > /usr/local/bin/sha256sum <<'EOF'",
        '#!/bin/sh',
        `readlink /proc/$$/fd/0 >> ${HASH_LOG}`,
        'exec /usr/bin/sha256sum "$@"',
        'EOF',
        'chmod 755 /usr/local/bin/sha256sum',
        // Hosts with openssl hash uploads with it (see SHA256_OF_FUNCTION in src/hosts/file-transfer.ts).
        "cat > /usr/local/bin/openssl <<'EOF'",
        '#!/bin/sh',
        `readlink /proc/$$/fd/0 >> ${HASH_LOG}`,
        'exec /usr/bin/openssl "$@"',
        'EOF',
        'chmod 755 /usr/local/bin/openssl',
      ].join('\n'),
    );
  }
}, 180_000);

afterAll(async () => {
  vi.restoreAllMocks();
  await env?.teardown();
});

/** Records the scripts every SshHost runs; `take` returns them by host name (`root@10.0.0.5:22`). */
function recordCommands(): { take: () => Map<string, string[]> } {
  const runRaw = vi.spyOn(SshHost.prototype as unknown as { runRaw: (command: unknown) => Promise<unknown> }, 'runRaw');
  return {
    take: () => {
      const byHost = new Map<string, string[]>();
      runRaw.mock.calls.forEach((args, index) => {
        const name = (runRaw.mock.contexts[index] as SshHost).name;
        byHost.set(name, [...(byHost.get(name) ?? []), (args[0] as { argv: string[] }).argv.join(' ')]);
      });
      runRaw.mockRestore();
      return byHost;
    },
  };
}

describe('fleet join, counted in commands on each host', () => {
  it(
    'collects facts once per host, hashes the package on the host once, and stays within its command budget',
    async () => {
      const [controlPlane, ...nodes] = env.targets as [TestHost, ...TestHost[]];
      const init = await clusterCli(
        home,
        CLI_TIMEOUT_MS,
      )([
        'init',
        '--host',
        `root@${controlPlane.address}`,
        '--ssh-key',
        env.keys.root,
        '--ssh-known-hosts',
        env.knownHostsFile,
        '--install-pkg-path',
        pkg,
        '--json',
      ]);
      expect(init.exitCode, printedBy(init)).toBe(0);
      const joinCommand = (JSON.parse(init.stdout) as InitResult).joinCommand!;
      const options: FleetJoinOptions = {
        inventoryFile: 'inventory.yaml',
        hosts: nodes.map((host, index): FleetHost => ({
          name: `store-${index + 1}`,
          address: host.address,
          ssh: { user: 'root', port: host.port },
          role: 'worker',
          groups: ['stores'],
          labels: {},
          isEdge: false,
        })),
        edgeadmHome: mkdtempSync(join(home, 'edgeadm-')),
        rollout: { concurrency: 2 },
        connect: { keyFiles: [env.keys.root], knownHostsFile: env.knownHostsFile, agentSocket: '' },
        logger: silentLogger,
        isDryRun: false,
        distribution: 'k3s',
        installPackage: pkg,
        requestedServiceManager: 'direct',
        discovery: parseDiscoveryRequest({
          endpoint: `${controlPlane.address}:6443`,
          token: /--token (\S+)/.exec(joinCommand)![1]!,
          caCertHashes: [/--discovery-token-ca-cert-hash (\S+)/.exec(joinCommand)![1]!],
          timeoutMs: 60_000,
        }),
        ignorePreflightErrors: [],
      };

      for (const [round, isFirst] of [
        ['first join', true],
        ['second join, nothing to do', false],
      ] as const) {
        for (const host of nodes) await env.run(host, `rm -f ${HASH_LOG}`);
        const recorder = recordCommands();
        vi.mocked(discovery.discover).mockClear();
        const result = await fleetJoin(options);
        const commands = recorder.take();
        // Discovery runs on this machine: once for the run, not once per host.
        expect(vi.mocked(discovery.discover), `${round}: discoveries`).toHaveBeenCalledTimes(1);
        expect(
          result.hosts.map((entry) => entry.status),
          `${round}: ${JSON.stringify(result.hosts)}`,
        ).toEqual(['done', 'done']);

        for (const host of nodes) {
          const ran = commands.get(`root@${host.address}:${host.port}`) ?? [];
          expect(
            ran.filter((script) => script.includes(FACTS_SCRIPT)),
            `${round}: facts runs on ${host.name}`,
          ).toHaveLength(1);
          const hashed = (await env.run(host, `cat ${HASH_LOG} 2>/dev/null || true`))
            .split('\n')
            .filter((path) => path === archive || path === `${archive}.edgeadm-part`);
          // Once: the upload's check of what arrived, or (nothing to send) its check of what is there.
          expect(hashed, `${round}: hashes of the package on ${host.name}`).toHaveLength(1);
          if (isFirst)
            expect(ran.length, `${round}: commands on ${host.name}`).toBeLessThanOrEqual(MAX_COMMANDS_PER_FIRST_JOIN);
        }
      }
    },
    TEST_TIMEOUT_MS,
  );
});
