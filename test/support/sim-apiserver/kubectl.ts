/**
 * Runs the real `kubectl` against a server (usually the simulated API
 * server) with a kubeconfig written to a private temporary file, and
 * returns its exit code and output. kubectl's discovery cache goes to a
 * temporary directory too, so runs never share state through ~/.kube.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { ensurePinnedKubectl } from '../pinned-kubectl.js';

/** How long {@link KubectlProcess.waitForOutput} waits before failing (a safety net, not a timing assertion). */
export const KUBECTL_OUTPUT_WAIT_MS = 20_000;

/** The pinned kubectl (test/support/pinned-kubectl.ts), which the vitest configuration fetches and names. */
export const KUBECTL_PATH = process.env['EDGEADM_TEST_KUBECTL'] ?? ensurePinnedKubectl();
/** Default time limit of one kubectl run. */
export const KUBECTL_TIMEOUT_MS = 30_000;

/** Options of {@link runKubectl}. */
export interface KubectlOptions {
  /** The kubeconfig's YAML text. */
  kubeconfig: string;
  input?: string | Buffer;
  timeoutMs?: number;
  env?: Record<string, string>;
}

/** What a kubectl run produced. */
export interface KubectlResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs `kubectl <args>`; never throws on a non-zero exit. */
export async function runKubectl(args: string[], options: KubectlOptions): Promise<KubectlResult> {
  const dir = await mkdtemp(join(tmpdir(), 'sim-kubectl-'));
  try {
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(kubeconfig, options.kubeconfig, { mode: 0o600 });
    const result = await execa(KUBECTL_PATH, args, {
      reject: false,
      env: { KUBECONFIG: kubeconfig, KUBECACHEDIR: join(dir, 'cache'), HOME: dir, ...options.env },
      extendEnv: true,
      ...(options.input !== undefined ? { input: options.input } : { stdin: 'ignore' }),
      timeout: options.timeoutMs ?? KUBECTL_TIMEOUT_MS,
      stripFinalNewline: false,
    });
    return { exitCode: result.exitCode ?? 1, stdout: String(result.stdout), stderr: String(result.stderr) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A kubectl that keeps running (watch, follow, port-forward). */
export interface KubectlProcess {
  /** Resolves with the first match of `pattern` in stdout+stderr so far or later. */
  waitForOutput(pattern: RegExp): Promise<RegExpMatchArray>;
  /** Everything printed so far (stdout and stderr interleaved). */
  output(): string;
  /** Resolves when kubectl exits by itself. */
  result: Promise<KubectlResult>;
  /** Stops kubectl (SIGTERM) and returns what it printed. */
  stop(): Promise<KubectlResult>;
}

/** Starts `kubectl <args>` in the background. */
export async function startKubectl(args: string[], options: KubectlOptions): Promise<KubectlProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'sim-kubectl-'));
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, options.kubeconfig, { mode: 0o600 });
  const child = execa(KUBECTL_PATH, args, {
    reject: false,
    env: { KUBECONFIG: kubeconfig, KUBECACHEDIR: join(dir, 'cache'), HOME: dir, ...options.env },
    extendEnv: true,
    ...(options.input !== undefined ? { input: options.input } : { stdin: 'ignore' }),
    stripFinalNewline: false,
  });
  let printed = '';
  const waiters = new Set<() => void>();
  const onOutput = (chunk: Buffer): void => {
    printed += chunk.toString('utf8');
    for (const waiter of [...waiters]) waiter();
  };
  child.stdout?.on('data', onOutput);
  child.stderr?.on('data', onOutput);
  let hasExited = false;
  const result = child.then(async (r) => {
    hasExited = true;
    for (const waiter of [...waiters]) waiter();
    await rm(dir, { recursive: true, force: true });
    return { exitCode: r.exitCode ?? 1, stdout: String(r.stdout), stderr: String(r.stderr) };
  });
  return {
    output: () => printed,
    result,
    waitForOutput(pattern) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const match = printed.match(pattern);
          if (match) {
            cleanup();
            resolve(match);
          } else if (hasExited) {
            cleanup();
            reject(new Error(`kubectl exited before printing ${String(pattern)}; it printed:\n${printed}`));
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`kubectl did not print ${String(pattern)}; it printed:\n${printed}`));
        }, KUBECTL_OUTPUT_WAIT_MS);
        const cleanup = (): void => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async stop() {
      if (!hasExited) child.kill('SIGTERM');
      return result;
    },
  };
}
