/**
 * `edgeadm kubectl` and `edgeadm kubeconfig` without a hub round trip:
 * the kubeconfig they build, and the clear error when kubectl is missing.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { writeHubConfig } from '../../../src/hub/contract/hub-config.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli } from '../../support/cli.js';
import { printedBy } from '../../support/run-output.js';

describe('edgeadm kubectl / kubeconfig', () => {
  const hubConfig = join(mkdtempSync(join(tmpdir(), 'hub-cfg-')), 'hub.yaml');

  beforeAll(() => {
    ensureCliBuilt('index.js', ['src']);
    writeHubConfig(hubConfig, {
      server: 'https://hub.example.com:9443',
      caPem: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
      user: 'alice',
      token: 'edgeadm-hub-sometoken',
    });
  });

  it('prints a kubeconfig that reaches the cluster through the hub with the hub token', async () => {
    const result = await runCli(['kubeconfig', '--cluster', 'store-042'], { env: { EDGEADM_HUB_CONFIG: hubConfig } });
    expect(result.exitCode, printedBy(result)).toBe(0);
    const config = load(result.stdout) as {
      clusters: { cluster: { server: string } }[];
      users: { user: { token: string } }[];
    };
    expect(config.clusters[0]?.cluster.server).toBe('https://hub.example.com:9443/clusters/store-042');
    expect(config.users[0]?.user.token).toBe('edgeadm-hub-sometoken');
  });

  it('fails with a clear error when there is no kubectl on PATH', async () => {
    const result = await runCli(['kubectl', '--hub-config', hubConfig, '--cluster', 'store-042', '--', 'get', 'ns'], {
      env: { PATH: mkdtempSync(join(tmpdir(), 'empty-path-')) },
    });
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain('kubectl was not found on PATH');
  });

  it('refuses a missing hub config and says where it looked', async () => {
    const home = mkdtempSync(join(tmpdir(), 'edgeadm-home-'));
    const result = await runCli(['hub', 'clusters', 'list'], { env: { EDGEADM_HOME: home } });
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain(join(home, 'hub.yaml'));
  });
});
