// The short git commit of the checkout, or `unknown` outside git: recorded in
// lib/build-info.json and in the single binary for `edgeadm version`.
import { execFileSync } from 'node:child_process';

/** @returns {string} */
export function gitCommit() {
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return 'unknown';
  }
}
