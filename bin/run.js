#!/usr/bin/env node
// edgeadm from a source checkout or an npm install.
//
// edgeadm needs Node.js 24. When started by an older Node (the system one),
// re-run under the Node 24 that the project pins as a devDependency, if present.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
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

const argv = process.argv.slice(2);
const { edgeProxyArgs } = await import('../lib/cli/agent-argv.js');
let code;
// `agent edge-proxy` is a long-running agent: its lean path starts it without
// loading the CLI framework, and hands anything it does not parse (--help,
// flag errors) back to the full CLI.
if (edgeProxyArgs(argv) !== undefined) {
  const { runAgentFastPath } = await import('../lib/cli/agent-fast-path.js');
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  code = await runAgentFastPath(argv, { version });
}
if (code === undefined) {
  const { main } = await import('../lib/cli/main.js');
  code = await main(argv, { root: fileURLToPath(new URL('..', import.meta.url)) });
}
process.exitCode = code;
// Exit as soon as the event loop is idle; if a stray handle keeps it alive, exit anyway.
setTimeout(() => process.exit(code), 200).unref();
