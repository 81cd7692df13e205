/**
 * k3s airgap images through the real CLI: `package build --images DIR`
 * carries the archives, `package inspect` lists them, `init` on a
 * netns+sshd test host puts them in k3s's import directory
 * (/var/lib/rancher/k3s/agent/images) with their SHA-256s, the SIMULATED
 * k3s (test/support/sim-k3s: not k3s) imports them at start as k3s does,
 * and `reset` removes them with the rest. `package build` refuses an empty
 * source and a file under images/ that k3s would not import.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { K3S_AIRGAP_IMAGES_DIR } from '../../../src/cluster/distributions/k3s.js';
import { STATE_FILE } from '../../../src/cluster/state.js';
import type { PackageSummary } from '../../../src/packages/inspect.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { clusterCliFor, type ClusterCli } from '../../support/cluster-cli.js';
import { fixtureBytes } from '../../support/package-fixtures.js';
import { simK3sScript, ZSTD_MAGIC } from '../../support/sim-k3s/fixture.js';
import { SIM_IMPORTED_IMAGES_LOG } from '../../support/sim-k3s/sim-k3s.js';
import { startTestHosts, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

const CLI_TIMEOUT_MS = 180_000;
const BUILD_FLAGS = ['--distribution', 'k3s', '--kubernetes-version', 'v1.30.4', '--arch', 'amd64'];

let env: TestHosts;
let cli: ClusterCli;
let work: string;
/** The image archives given with --images, by file name. */
const images = new Map<string, Buffer>();

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** A k3s source directory with the simulated k3s and nothing else. */
function k3sSource(name: string): string {
  const dir = join(work, name);
  mkdirSync(join(dir, 'bin'), { recursive: true });
  writeFileSync(join(dir, 'bin', 'k3s'), simK3sScript(), { mode: 0o755 });
  return dir;
}

beforeAll(async () => {
  ensureCliBuilt('commands/package/build.js', ['src', 'test/support/sim-k3s']);
  env = await startTestHosts({ count: 1 });
  cli = clusterCliFor(env, mkdtempSync(join(env.dir, 'cli-home-')), CLI_TIMEOUT_MS);
  work = mkdtempSync(join(env.dir, 'images-'));
  // A real (small) tar archive, the same gzipped, and a few MiB that start as a zstd frame does.
  const content = join(work, 'layer');
  mkdirSync(content);
  writeFileSync(join(content, 'blob'), fixtureBytes('blob', 20_000));
  const tar = execFileSync('tar', ['-cf', '-', '-C', content, 'blob']);
  images.set('app.tar', tar);
  images.set('app-gz.tar.gz', gzipSync(tar));
  images.set(
    'k3s-airgap-images-amd64.tar.zst',
    Buffer.concat([ZSTD_MAGIC, fixtureBytes('k3s-images', 4 * 1024 * 1024)]),
  );
}, 180_000);

afterAll(async () => {
  await env?.teardown();
});

describe('a k3s package with airgap images', () => {
  it('init puts them in k3s import directory with their checksums, sim k3s imports them, reset removes them', async () => {
    const imagesDir = join(work, 'airgap');
    mkdirSync(imagesDir);
    for (const [name, bytes] of images) writeFileSync(join(imagesDir, name), bytes);
    const pkg = join(work, 'with-images.tar.gz');
    const build = await cli.edgeadm([
      'package',
      'build',
      '--from',
      k3sSource('src'),
      '--images',
      imagesDir,
      ...BUILD_FLAGS,
      '-o',
      pkg,
      '--json',
    ]);
    expect(build.exitCode, printedBy(build)).toBe(0);

    const inspect = cli.json<PackageSummary>(await cli.edgeadm(['package', 'inspect', pkg, '--json']));
    const expected = [...images]
      .map(([name, bytes]) => ({ path: `images/${name}`, size: bytes.length, sha256: sha256(bytes) }))
      .sort((a, b) => (a.path < b.path ? -1 : 1));
    expect(inspect.images.map(({ path, size, sha256: sum }) => ({ path, size, sha256: sum }))).toEqual(expected);
    const text = await cli.edgeadm(['package', 'inspect', pkg]);
    expect(text.stdout).toContain(`  app.tar  ${(images.get('app.tar')!.length / 1048576).toFixed(1)} MiB  sha256 `);

    const host = env.targets[0]!;
    const before = await cli.listing(host);
    const plan = await cli.edgeadm([
      'init',
      ...cli.sshArgs(host),
      '--install-pkg-path',
      pkg,
      '--skip-kubeconfig',
      '--dry-run',
    ]);
    expect(plan.exitCode, printedBy(plan)).toBe(0);
    for (const name of images.keys()) {
      expect(`${plan.stdout}${plan.stderr}`).toContain(`install ${K3S_AIRGAP_IMAGES_DIR}/${name} from the package`);
    }
    expect(await cli.listing(host)).toBe(before);

    const init = await cli.edgeadm(['init', ...cli.sshArgs(host), '--install-pkg-path', pkg, '--skip-kubeconfig']);
    expect(init.exitCode, printedBy(init)).toBe(0);

    // The files k3s imports at start, with the manifest's checksums.
    const onHost = await env.run(host, `cd ${K3S_AIRGAP_IMAGES_DIR} && sha256sum -- * | sort -k2`);
    expect(onHost.trim().split('\n')).toEqual(
      [...images].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, bytes]) => `${sha256(bytes)}  ${name}`),
    );
    // The simulated k3s took each of them in at start, as k3s's preload of agent/images does.
    const imported = (await env.run(host, `cat ${SIM_IMPORTED_IMAGES_LOG}`))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { file: string; sha256: string; size: number });
    expect(imported.sort((a, b) => (a.file < b.file ? -1 : 1))).toEqual(
      expected.map(({ path, size, sha256: sum }) => ({ file: path.slice('images/'.length), sha256: sum, size })),
    );
    // Recorded one by one in the install state, so reset knows them even without the package.
    const state = JSON.parse(await env.run(host, `cat ${STATE_FILE}`)) as { files: string[] };
    for (const name of images.keys()) expect(state.files).toContain(`${K3S_AIRGAP_IMAGES_DIR}/${name}`);

    const reset = await cli.edgeadm(['reset', ...cli.sshArgs(host), '--force']);
    expect(reset.exitCode, printedBy(reset)).toBe(0);
    expect(await env.run(host, `ls -A ${K3S_AIRGAP_IMAGES_DIR} 2>&1 || true`)).toMatch(/No such file or directory/);
    expect(await cli.listing(host)).toBe(before);
  });
});

describe('package build refuses', () => {
  it('an empty source directory, listing what a k3s package must hold', async () => {
    const empty = join(work, 'empty');
    mkdirSync(empty);
    const run = await cli.edgeadm(['package', 'build', '--from', empty, ...BUILD_FLAGS, '-o', join(work, 'e.tar.gz')]);
    expect(run.exitCode).toBe(3);
    expect(run.stderr).toMatch(/E_PACKAGE_INCOMPLETE/);
    expect(run.stderr).toMatch(/holds no files that a k3s package must hold: bin\/k3s/);
  });

  it('a file under images/ that k3s does not import, naming it', async () => {
    const source = k3sSource('src-readme');
    mkdirSync(join(source, 'images'));
    writeFileSync(join(source, 'images', 'README'), 'not an image');
    const output = join(work, 'readme.tar.gz');
    const run = await cli.edgeadm(['package', 'build', '--from', source, ...BUILD_FLAGS, '-o', output]);
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr).toMatch(/E_PACKAGE_SOURCE/);
    expect(run.stderr).toMatch(/"images\/README" is not an airgap image archive a k3s package can carry/);
    expect(await env.run(env.targets[0]!, `ls ${output} 2>&1 || true`)).toMatch(/No such file/);
  });
});
