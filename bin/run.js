#!/usr/bin/env node
// edgeadm from a source checkout or an npm install.
//
// edgeadm needs Node.js 24. When started by an older Node (the system one),
// re-run under the Node 24 that the project pins as a devDependency, if present.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const REQUIRED_MAJOR = 24;
const major = Number(process.versions.node.split('.')[0]);

if (major < REQUIRED_MAJOR) {
  const pinned = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url));
  if (existsSync(pinned) && process.execPath !== pinned) {
    const child = spawnSync(pinned, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
    process.exit(child.status ?? 1);
  }
  process.stderr.write(
    `error: edgeadm needs Node.js ${REQUIRED_MAJOR} or newer, and this is ${process.version}.\n` +
      '  hint: use the single binary (dist/edgeadm-linux-x64), or run "npm ci" in the source checkout to get the pinned Node.\n',
  );
  process.exit(1);
}

const { main } = await import('../lib/cli/main.js');
const code = await main(process.argv.slice(2), { root: fileURLToPath(new URL('..', import.meta.url)) });
process.exitCode = code;
// Exit as soon as the event loop is idle; if a stray handle keeps it alive, exit anyway.
setTimeout(() => process.exit(code), 200).unref();
