/**
 * Before `edgeadm kubectl` hands a cluster to kubectl: one request through
 * the hub's kube proxy, so that a cluster the hub refuses (unknown,
 * forbidden, disconnected) is reported once in the hub's own words, instead
 * of kubectl's "couldn't get current server API group list: unknown", five
 * times.
 */
import { request } from 'node:https';
import { EdgeadmError, ExitCode } from '../errors.js';
import type { HubConfig } from '../hub/contract/hub-config.js';
import { HUB_CLIENT_TIMEOUT_MS } from './limits.js';

/** The largest Status read back from the probe. */
const MAX_PROBE_ANSWER_BYTES = 64 * 1024;

/** What the hub itself refused with: its Status carries an `E_HUB_…` cause (src/hub/http/http-replies.ts). */
export interface HubRefusal {
  status: number;
  code: string;
  message: string;
}

/**
 * The hub's refusal in a kube proxy answer, or undefined when the answer is
 * not one (a success, or the cluster's own API server answering: kubectl
 * shows those itself). Pure.
 */
export function hubRefusalOf(status: number, body: string): HubRefusal | undefined {
  if (status < 400) return undefined;
  try {
    const parsed = JSON.parse(body) as { message?: unknown; details?: { causes?: Array<{ reason?: unknown }> } };
    const code = parsed.details?.causes?.[0]?.reason;
    if (typeof code !== 'string' || !/^E_(HUB|AGENT)_/.test(code) || typeof parsed.message !== 'string') {
      return undefined;
    }
    return { status, code, message: parsed.message };
  } catch {
    return undefined;
  }
}

/**
 * Asks `GET /clusters/NAME/version` through the hub.
 *
 * @throws {EdgeadmError} with the hub's code and message when the hub refuses
 *   the cluster; unreachable hubs and cluster answers are left to kubectl.
 */
export async function assertClusterReachable(config: HubConfig, cluster: string): Promise<void> {
  const answer = await new Promise<{ status: number; body: string } | undefined>((resolve) => {
    const req = request(
      new URL(`/clusters/${encodeURIComponent(cluster)}/version`, config.server),
      {
        ca: config.caPem,
        agent: false,
        timeout: HUB_CLIENT_TIMEOUT_MS,
        headers: { Accept: 'application/json', Authorization: `Bearer ${config.token}` },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= MAX_PROBE_ANSWER_BYTES) chunks.push(chunk);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', () => resolve(undefined));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end();
  });
  const refusal = answer && hubRefusalOf(answer.status, answer.body);
  if (refusal === undefined) return;
  throw new EdgeadmError(`the hub refused cluster "${cluster}": ${refusal.message}`, {
    code: refusal.code,
    exitCode: refusal.status === 403 || refusal.status === 404 ? ExitCode.Validation : ExitCode.General,
    details: { status: refusal.status },
    hints: [
      refusal.status === 403
        ? 'Check the name: an admin lists the clusters with "edgeadm hub clusters list"; a scoped user sees theirs in the web view (https://HUB/ui/).'
        : 'Check "edgeadm hub clusters get NAME": a cluster whose agent is not connected cannot be reached.',
    ],
  });
}
