// Smoke test of the single binary on a host with no Node.js: it must run with
// an empty environment and PATH=/nonexistent, and every command of the dev CLI
// (every id in oclif.manifest.json) must be in it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const binary = join(root, 'dist', `edgeadm-linux-${process.arch}`);
const env = { PATH: '/nonexistent', HOME: mkdtempSync(join(tmpdir(), 'edgeadm-smoke-')) };
const run = (args) => spawnSync(binary, args, { env, encoding: 'utf8' });

const failures = [];
const version = run(['version', '--json']);
try {
  const report = JSON.parse(version.stdout);
  if (version.status !== 0 || report.singleBinary !== true)
    failures.push(`version --json: ${version.status} ${version.stdout}`);
} catch {
  failures.push(`version --json did not print JSON: ${version.stdout} ${version.stderr}`);
}

// Every command but `version` lives in the commands script, a SEA asset that
// is compiled when one of them first runs: run one, and one that fails.
const token = run(['token', 'generate', '--json']);
try {
  if (token.status !== 0 || !/^[a-z0-9]{6}\.[a-z0-9]{16}$/.test(JSON.parse(token.stdout).token))
    failures.push(`token generate --json: ${token.status} ${token.stdout} ${token.stderr}`);
} catch {
  failures.push(`token generate --json did not print JSON: ${token.stdout} ${token.stderr}`);
}
const invalid = run(['certs', 'ca-hash', '--json']);
try {
  const document = JSON.parse(invalid.stdout);
  if (invalid.status !== 3 || typeof document.error?.code !== 'string')
    failures.push(
      `certs ca-hash without a CA: expected exit 3 and a JSON error, got ${invalid.status} ${invalid.stdout}`,
    );
} catch {
  failures.push(`certs ca-hash --json did not print JSON: ${invalid.stdout} ${invalid.stderr}`);
}

const manifest = JSON.parse(readFileSync(join(root, 'oclif.manifest.json'), 'utf8'));
const ids = Object.keys(manifest.commands);
for (const id of ids) {
  const help = run([...id.split(':'), '--help']);
  if (help.status !== 0 || !help.stdout.includes('USAGE'))
    failures.push(`${id} --help: exit ${help.status} ${help.stderr}`);
}

rmSync(env.HOME, { recursive: true, force: true });
if (failures.length > 0) {
  console.error(`smoke-binary: ${failures.length} failed\n${failures.join('\n')}`);
  process.exit(1);
}
console.log(
  `smoke-binary: ${binary} runs without Node (version --json, token generate, certs ca-hash's error, and --help of all ${ids.length} commands)`,
);
