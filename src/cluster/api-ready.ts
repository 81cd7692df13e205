/**
 * Waiting for an API server to answer `/readyz` with 200: init's first
 * control plane, and each control plane that joins.
 */
import { EdgeadmError } from '../errors.js';
import type { KubeClient } from '../kube/client.js';

/**
 * Asks `/readyz` every `pollMs` until it answers 200.
 *
 * @throws {EdgeadmError} `E_API_NOT_READY` after `timeoutMs`, with the last answer or error.
 */
export async function waitForApiReady(
  client: KubeClient,
  options: { timeoutMs: number; pollMs: number; what: string },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    let last: string;
    try {
      const response = await client.raw('GET', '/readyz');
      if (response.status === 200) return;
      last = `HTTP ${response.status}`;
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() > deadline) {
      throw new EdgeadmError(
        `${options.what} at ${client.server} was not ready within ${options.timeoutMs / 1000} s: ${last}`,
        { code: 'E_API_NOT_READY' },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, options.pollMs));
  }
}
