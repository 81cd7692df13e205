// The floor under the edge-proxy's RSS: what Node itself holds, idle and as
// an HTTPS server that answers a 1.6 KB body to each GET (no cache, no
// routes), with the edge-proxy unit's settings. Compare with run.js's
// figures (bench/edge-proxy/RESULTS.md).
//
//   NODE_OPTIONS="--max-semi-space-size=1 --jitless" MALLOC_ARENA_MAX=1 \
//     MALLOC_TRIM_THRESHOLD_=131072 MALLOC_MMAP_THRESHOLD_=131072 \
//     node bench/edge-proxy/floor.cjs idle|one|load
//
// The client runs in another process, so its memory is not counted.
/* eslint-disable @typescript-eslint/no-require-imports, no-undef -- CommonJS on purpose: the agent runs as a CommonJS script, and the ESM loader alone maps about 1.5 MiB more. */
// CommonJS, as the agent's script runs; only node:fs and node:v8 before the
// idle figure, the rest is required after it.
const { readFileSync } = require('node:fs');
const { setFlagsFromString } = require('node:v8');

/** As the agent does for itself (AGENT_V8_FLAGS in src/edge/agent.ts). */
setFlagsFromString('--optimize-for-size');
const mode = process.argv[2] ?? 'load';
/** GETs in the `load` mode, 16 in flight (the benchmark's throughput phase). */
const LOAD_REQUESTS = 8000;
const IN_FLIGHT = 16;

function rss() {
  const status = readFileSync('/proc/self/status', 'utf8');
  const mib = (field) => (Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)[1]) / 1024).toFixed(1);
  return `${mib('VmRSS')} MiB (anon ${mib('RssAnon')} + file ${mib('RssFile')})`;
}

async function main() {
  if (mode === 'idle') {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    console.log(`node, idle: ${rss()}`);
    process.exit(0);
  }

  const { execFileSync, spawn } = require('node:child_process');
  const { mkdtempSync, rmSync } = require('node:fs');
  const { createServer } = require('node:https');
  const { tmpdir } = require('node:os');
  const { join } = require('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'edgeadm-bench-floor-'));
  const [keyFile, certFile] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-subj',
      '/CN=127.0.0.1',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  );
  const body = Buffer.alloc(1600, 'x');
  const server = createServer({ key: readFileSync(keyFile), cert: readFileSync(certFile) }, (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(body);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const requests = mode === 'load' ? LOAD_REQUESTS : 1;
  const client = spawn(
    process.execPath,
    [
      '-e',
      `const https = require('node:https');
       const agent = new https.Agent({ keepAlive: true, maxSockets: ${IN_FLIGHT}, rejectUnauthorized: false });
       let left = ${requests}, inFlight = 0;
       function one() {
         if (left-- <= 0) { if (--inFlight === 0) process.exit(0); return; }
         https.get({ host: '127.0.0.1', port: ${server.address().port}, agent, path: '/' }, (res) => { res.resume(); res.on('end', one); });
       }
       for (let i = 0; i < ${IN_FLIGHT}; i++) { inFlight++; one(); }`,
    ],
    { stdio: 'inherit', env: {} },
  );
  await new Promise((resolve) => client.on('exit', resolve));
  console.log(`node + https server after ${requests} GET(s), ${mode === 'load' ? IN_FLIGHT : 1} in flight: ${rss()}`);
  server.close();
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

void main();
