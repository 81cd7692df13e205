// Builds the hub's web view (web/) into one pack, lib/web-assets.json: the
// page, its script and its stylesheet (content-hashed names), each file's
// bytes base64 with its content type. The hub serves the pack from memory
// (src/hub/web/assets.ts); the single binary carries it as a SEA asset.
//
//   node scripts/build-web.js            (part of `npm run build`)
//   node scripts/build-web.js --sizes    also prints each file's gzipped size
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = join(root, 'lib', 'web-build');
/** The pack file: its name is WEB_ASSETS_PACK in src/hub/web/assets.ts. */
export const PACK = join(root, 'lib', 'web-assets.json');

const result = await build({
  entryPoints: [join(root, 'web', 'src', 'main.tsx')],
  bundle: true,
  format: 'esm',
  target: ['es2022', 'chrome110', 'firefox110', 'safari16'],
  minify: true,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  entryNames: '[name]-[hash]',
  outdir,
  write: false,
  legalComments: 'none',
  logLevel: 'warning',
  define: { 'process.env.NODE_ENV': '"production"' },
});

const files = {};
let script;
let style;
for (const file of result.outputFiles) {
  const name = basename(file.path);
  const type = name.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8';
  files[`assets/${name}`] = { type, body: Buffer.from(file.contents).toString('base64'), immutable: true };
  if (name.endsWith('.js')) script = name;
  if (name.endsWith('.css')) style = name;
}
if (script === undefined || style === undefined) throw new Error('the web build made no script or no stylesheet');
// No inline script or style: the Content-Security-Policy allows the hub's own files only.
const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>edgeadm hub</title>
<link rel="stylesheet" href="assets/${style}">
<script type="module" src="assets/${script}"></script>
</head>
<body>
<div id="app"><p>Loading…</p></div>
<noscript>The edgeadm hub view needs JavaScript.</noscript>
</body>
</html>
`;
files['index.html'] = {
  type: 'text/html; charset=utf-8',
  body: Buffer.from(html).toString('base64'),
  immutable: false,
};
mkdirSync(join(root, 'lib'), { recursive: true });
writeFileSync(PACK, JSON.stringify({ files }));

let total = 0;
const sizes = Object.entries(files).map(([path, file]) => {
  const gzipped = gzipSync(Buffer.from(file.body, 'base64'), { level: 9 }).length;
  total += gzipped;
  return `${path}: ${Buffer.from(file.body, 'base64').length} B, ${gzipped} B gzipped`;
});
if (process.argv.includes('--sizes')) for (const line of sizes) console.log(line);
console.log(`web view: ${Object.keys(files).length} files, ${total} B gzipped in all (lib/web-assets.json)`);
