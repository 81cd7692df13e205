/**
 * `edgeadm kubectl`: runs the kubectl on PATH against one cluster through
 * the hub, with a kubeconfig in a private temporary file, passing stdio
 * (so `exec -it` works) and the exit code through.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { EdgeadmError } from '../errors.js';

/** Options of {@link runKubectlThroughHub}. */
export interface KubectlRunOptions {
  /** The kubeconfig text (a credential). */
  kubeconfig: string;
  args: string[];
  /** The kubectl to run; `kubectl` on PATH by default. */
  kubectl?: string;
}

/**
 * Runs kubectl and returns its exit code.
 *
 * @throws {EdgeadmError} `E_KUBECTL_NOT_FOUND` (exit 3) when there is no kubectl.
 */
export async function runKubectlThroughHub(options: KubectlRunOptions): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'edgeadm-kubectl-'));
  const path = join(dir, 'kubeconfig');
  writeFileSync(path, options.kubeconfig, { mode: 0o600 });
  try {
    const result = await execa(options.kubectl ?? 'kubectl', options.args, {
      stdio: 'inherit',
      reject: false,
      env: { KUBECONFIG: path },
    });
    if ((result as { code?: string }).code === 'ENOENT' || (result.failed && result.exitCode === undefined)) {
      throw new EdgeadmError('kubectl was not found on PATH', {
        code: 'E_KUBECTL_NOT_FOUND',
        exitCode: 3,
        hints: ['Install kubectl, or use "edgeadm kubeconfig --cluster NAME > FILE" with any Kubernetes client.'],
      });
    }
    return result.exitCode ?? 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
