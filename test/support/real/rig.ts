/**
 * The real-Kubernetes rig: real upstream Kubernetes (kubeadm, kubelet, the
 * control plane, kubectl), etcd and CoreDNS, built from their own Go modules
 * by test/real/build.sh; Debian's containerd, runc and CNI plugins; images
 * made here without a registry (./oci-image.ts); and an install package made
 * by `edgeadm package build` from all of it, as an operator makes one.
 *
 * Stand-ins, named as such: the pause image and the test workload image are
 * Debian's static busybox, not the upstream images (the upstream pause is C
 * outside any Go module; the workload only has to print and sleep).
 *
 * Everything lands under {@link RIG_CACHE} and is made once per content key,
 * so a second run reuses it. See test/real/README.md.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  programWithLibraries,
  sharedLibrariesOf,
  writeImageArchive,
  type ImageFile,
  type ImageSpec,
} from './oci-image.js';

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
/** Where the rig keeps its Go caches, built programs, images and packages (test/real/build.sh uses the same). */
export const RIG_CACHE = process.env.EDGEADM_RIG_CACHE ?? '/var/cache/edgeadm-rig';
/** The script that builds the rig's programs. */
export const RIG_BUILD_SCRIPT = join(REPO_ROOT, 'test', 'real', 'build.sh');

/** What test/real/build.sh recorded for one set of programs. */
export interface BuiltSet {
  set: string;
  version: string;
  go: string;
  buildSeconds: number;
  sha256: Record<string, string>;
  dir: string;
}

/** Debian's programs the rig's package and images take (packages: containerd, runc, containernetworking-plugins, busybox-static, iptables). */
export const DEBIAN_PROGRAMS = {
  containerd: '/usr/bin/containerd',
  'containerd-shim-runc-v2': '/usr/bin/containerd-shim-runc-v2',
  runc: '/usr/sbin/runc',
  ctr: '/usr/bin/ctr',
  busybox: '/bin/busybox',
  cniDir: '/usr/lib/cni',
  xtables: '/usr/sbin/xtables-nft-multi',
  xtablesModules: '/usr/lib/x86_64-linux-gnu/xtables',
  conntrack: '/usr/sbin/conntrack',
} as const;

/** The rig's programs of one set, or a clear error saying how to build them. */
export function builtSet(set: 'kubernetes' | 'etcd' | 'coredns' | 'cosign' | 'promtool'): BuiltSet {
  const dir = join(RIG_CACHE, 'out', set);
  const record = join(dir, 'versions.json');
  if (!existsSync(record)) {
    throw new Error(
      `the real-Kubernetes rig has no ${set} programs in ${dir}: run ${RIG_BUILD_SCRIPT} (it builds them from their Go modules)`,
    );
  }
  return { ...(JSON.parse(readFileSync(record, 'utf8')) as Omit<BuiltSet, 'dir'>), dir };
}

/**
 * A program test/real/build.sh built from its Go module for a test that
 * checks edgeadm against it, or why there is none.
 */
function builtProgram(set: 'cosign' | 'promtool'): { binary: string; version: string } | { reason: string } {
  const dir = join(RIG_CACHE, 'out', set);
  if (!existsSync(join(dir, 'versions.json')) || !existsSync(join(dir, set))) {
    return {
      reason: `${set} is not built in ${dir}: run ${RIG_BUILD_SCRIPT} ${set} (it builds ${set} from its Go module)`,
    };
  }
  return { binary: join(dir, set), version: builtSet(set).version };
}

/** The cosign of the package signature differential, or why there is none. */
export function builtCosign(): { binary: string; version: string } | { reason: string } {
  return builtProgram('cosign');
}

/** The promtool that checks and unit-tests the hub's alert rules, or why there is none. */
export function builtPromtool(): { binary: string; version: string } | { reason: string } {
  return builtProgram('promtool');
}

/** Why the rig cannot run on this machine, or undefined when it can. */
export function rigUnavailableReason(): string | undefined {
  for (const set of ['kubernetes', 'etcd', 'coredns'] as const) {
    if (!existsSync(join(RIG_CACHE, 'out', set, 'versions.json')))
      return `${set} is not built (run ${RIG_BUILD_SCRIPT})`;
  }
  for (const [name, path] of Object.entries(DEBIAN_PROGRAMS)) {
    if (!existsSync(path))
      return `${path} (${name}) is missing: install Debian's containerd, runc, containernetworking-plugins, busybox-static, iptables and conntrack`;
  }
  return chrootReason();
}

/**
 * Why `kubectl exec` would not reach the rig's pods from here, if it would not: this process runs
 * under a chroot. runc's exec joins a container's mount namespace with setns(2), which puts the
 * caller at that namespace's root mount; under a chroot that root is the machine's, with the
 * container's rootfs pivoted onto the chroot's path beneath it, so the command runs at the
 * machine's / and reads its /proc. A machine's root, or one entered with pivot_root (as
 * scripts/fresh-root.sh does), is its namespace's root. Found by entering this process's own
 * mount namespace again, which moves to that root, and comparing `/` there and here.
 */
export function chrootReason(): string | undefined {
  const here = statSync('/');
  let namespaceRoot: string;
  try {
    namespaceRoot = execFileSync('nsenter', ['--mount=/proc/self/ns/mnt', 'stat', '-c', '%d %i', '/'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    // Not allowed to enter (not root): the rig cannot run anyway, and says so elsewhere.
    return undefined;
  }
  if (namespaceRoot === `${here.dev} ${here.ino}`) return undefined;
  return (
    "this process runs under a chroot, where runc's exec lands outside the container (kubectl exec would run at the machine's /); " +
    'enter the root with pivot_root in a mount namespace of its own instead (scripts/fresh-root.sh does)'
  );
}

/** The busybox applets the stand-in images link (what the tests and the pause loop call). */
const BUSYBOX_APPLETS = [
  'sh',
  'sleep',
  'echo',
  'cat',
  'date',
  'hostname',
  'ls',
  'wget',
  'nc',
  'env',
  'printf',
  'true',
  'head',
  'seq',
  'httpd',
  // kubectl cp runs `tar` in the container; the node tunnel's 1 GiB copy checks it with sha256sum.
  'tar',
  'sha256sum',
  'rm',
];

function busyboxRoot(): ImageFile[] {
  return [
    { path: '/bin/busybox', from: DEBIAN_PROGRAMS.busybox, mode: 0o755 },
    ...BUSYBOX_APPLETS.map((applet) => ({ path: `/bin/${applet}`, symlinkTo: 'busybox' })),
    { path: '/etc/passwd', content: 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' },
    { path: '/etc/group', content: 'root:x:0:\nnobody:x:65534:\n' },
    { path: '/tmp/.keep', content: '' },
  ];
}

/** The images of a kubeadm cluster at the rig's versions, and the test workload. */
export function kubeadmImageSpecs(): ImageSpec[] {
  const kubernetes = builtSet('kubernetes');
  const etcd = builtSet('etcd');
  const coredns = builtSet('coredns');
  const v = kubernetes.version;
  const control = (name: string): ImageSpec => ({
    reference: `registry.k8s.io/${name}:${v}`,
    files: [{ path: `/usr/local/bin/${name}`, from: join(kubernetes.dir, name), mode: 0o755 }],
  });
  // kube-proxy programs iptables in the node's network namespace: Debian's nft-based iptables, with its libraries.
  const xtables = programWithLibraries(DEBIAN_PROGRAMS.xtables);
  const xtablesLinks = [
    'iptables',
    'iptables-save',
    'iptables-restore',
    'ip6tables',
    'ip6tables-save',
    'ip6tables-restore',
  ].map((name) => ({ path: `/usr/sbin/${name}`, symlinkTo: 'xtables-nft-multi' }));
  // With the libraries the modules load themselves: libxt_statistic.so (the random choice among a
  // Service's endpoints, used from two endpoints on) needs libm, which iptables itself does not.
  const moduleFiles = readdirSync(DEBIAN_PROGRAMS.xtablesModules).flatMap((name) => [
    { path: join(DEBIAN_PROGRAMS.xtablesModules, name), from: join(DEBIAN_PROGRAMS.xtablesModules, name), mode: 0o644 },
    ...sharedLibrariesOf(join(DEBIAN_PROGRAMS.xtablesModules, name)).map((library) => ({
      path: library,
      from: library,
      mode: 0o755,
    })),
  ]);
  const xtablesModules = [...new Map(moduleFiles.map((file) => [file.path, file])).values()];
  // pause: PID 1 of every pod sandbox; a stand-in that sleeps, reaps and exits on TERM.
  const pauseLoop = ['/bin/sh', '-c', "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"];
  return [
    control('kube-apiserver'),
    control('kube-controller-manager'),
    control('kube-scheduler'),
    {
      reference: `registry.k8s.io/kube-proxy:${v}`,
      files: [
        { path: '/usr/local/bin/kube-proxy', from: join(kubernetes.dir, 'kube-proxy'), mode: 0o755 },
        ...xtables,
        ...xtablesLinks,
        ...xtablesModules,
        ...programWithLibraries(DEBIAN_PROGRAMS.conntrack),
      ],
    },
    {
      reference: `registry.k8s.io/etcd:${etcd.version.replace(/^v/, '')}-0`,
      files: [
        { path: '/usr/local/bin/etcd', from: join(etcd.dir, 'etcd'), mode: 0o755 },
        { path: '/var/lib/etcd/.keep', content: '' },
      ],
    },
    {
      reference: `registry.k8s.io/coredns/coredns:${coredns.version}`,
      files: [{ path: '/coredns', from: join(coredns.dir, 'coredns'), mode: 0o755 }],
      entrypoint: ['/coredns'],
    },
    // kubeadm's pause, and the one edgeadm's containerd configuration names as sandbox image.
    ...['registry.k8s.io/pause:3.10.1', 'registry.k8s.io/pause:3.9'].map((reference) => ({
      reference,
      files: busyboxRoot(),
      entrypoint: pauseLoop,
    })),
    { reference: RIG_WORKLOAD_IMAGE, files: busyboxRoot(), entrypoint: ['/bin/sh'] },
  ];
}

/** The test workload's image (busybox), present on every node through the package, never pulled. */
export const RIG_WORKLOAD_IMAGE = 'edgeadm.test/busybox:rig';

function contentKey(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 16);
}

/** A directory made once: built in `<dir>.tmp`, then renamed. */
async function once(dir: string, make: (tmp: string) => Promise<void>): Promise<string> {
  if (existsSync(join(dir, '.done'))) return dir;
  const tmp = `${dir}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  await make(tmp);
  writeFileSync(join(tmp, '.done'), '');
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

/** The rig's kubeadm install package, made by `edgeadm package build`; its path and versions. */
export interface RigPackage {
  file: string;
  kubernetesVersion: string;
  images: string[];
}

/**
 * The kubeadm install package of the rig: bin/ (kubeadm, kubelet from the
 * rig; containerd, its shim, runc and ctr from Debian), cni/ (Debian's
 * plugins) and images/ (every image of {@link kubeadmImageSpecs}), built by
 * the edgeadm CLI of this checkout.
 */
export async function rigKubeadmPackage(
  edgeadm: string[] = ['node', join(REPO_ROOT, 'bin', 'run.js')],
): Promise<RigPackage> {
  const kubernetes = builtSet('kubernetes');
  const specs = kubeadmImageSpecs();
  const key = contentKey({
    kubernetes: kubernetes.sha256,
    etcd: builtSet('etcd').sha256,
    coredns: builtSet('coredns').sha256,
    // What each image holds by path (a busybox applet added is a new image), its entry point too.
    images: specs.map((s) => ({
      reference: s.reference,
      files: s.files.map((f) => ('symlinkTo' in f ? `${f.path}->${f.symlinkTo}` : f.path)),
      entrypoint: s.entrypoint,
    })),
    debian: Object.values(DEBIAN_PROGRAMS).map(
      (p) => `${p}:${existsSync(p) ? execFileSync('stat', ['-c', '%s %Y', p], { encoding: 'utf8' }).trim() : '-'}`,
    ),
    format: 2,
  });
  const dir = await once(join(RIG_CACHE, 'packages', `kubeadm-${key}`), async (tmp) => {
    const source = join(tmp, 'source');
    mkdirSync(join(source, 'bin'), { recursive: true });
    mkdirSync(join(source, 'cni'), { recursive: true });
    for (const name of ['kubeadm', 'kubelet']) copyFileSync(join(kubernetes.dir, name), join(source, 'bin', name));
    for (const name of ['containerd', 'containerd-shim-runc-v2', 'runc', 'ctr'] as const) {
      copyFileSync(DEBIAN_PROGRAMS[name], join(source, 'bin', name));
    }
    for (const plugin of ['bridge', 'host-local', 'loopback', 'portmap']) {
      copyFileSync(join(DEBIAN_PROGRAMS.cniDir, plugin), join(source, 'cni', plugin));
    }
    const images = join(tmp, 'images');
    for (const spec of specs) {
      const name = spec.reference.replace(/[/:]/g, '_');
      await writeImageArchive(spec, join(images, `${name}.tar`));
    }
    execFileSync(
      edgeadm[0]!,
      [
        ...edgeadm.slice(1),
        'package',
        'build',
        '--from',
        source,
        '--images',
        images,
        '--distribution',
        'kubeadm',
        '--kubernetes-version',
        kubernetes.version,
        '--arch',
        'amd64',
        '--output',
        join(tmp, 'kubeadm.tar.gz'),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    rmSync(source, { recursive: true, force: true });
    rmSync(images, { recursive: true, force: true });
  });
  return {
    file: join(dir, 'kubeadm.tar.gz'),
    kubernetesVersion: kubernetes.version,
    images: specs.map((s) => s.reference),
  };
}

/**
 * The edgeadm the real suites run: the single binary named by EDGEADM_BIN
 * (`--enable-edge` uploads it to the nodes), as `.ci/run` builds it.
 */
export function realEdgeadm(): [string, string[]] {
  const binary = process.env.EDGEADM_BIN;
  if (!binary || !existsSync(binary)) {
    throw new Error(
      'the real suites run the single binary: build it (npm run build:binary) and set EDGEADM_BIN=dist/edgeadm-linux-x64',
    );
  }
  return [binary, []];
}
