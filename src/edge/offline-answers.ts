/**
 * What edge-proxy answers while the API server is unreachable: reads from
 * the cache (a miss is 503), node registration of a node the cache knows
 * with 409 AlreadyExists, every other write 503 with a Status that says why
 * (the policy is offline-writes.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseApiPath } from '../kube/api-path.js';
import { sendStatus } from './api-status.js';
import { cacheKeyOf, classifyRequest, type ClassifiedRequest } from './cache-key.js';
import { isCacheableRead, type CachedAnswers } from './cached-answers.js';
import { MAX_OFFLINE_WRITE_BODY_BYTES } from './limits.js';
import type { RequestCounters } from './metrics.js';
import {
  answerOfflineNodeRegistration,
  isDnsSubdomainName,
  isNodeRegistration,
  offlineRefusal,
  registeredNodeName,
} from './offline-writes.js';

/**
 * The read of `/api/v1/nodes/<name>` whose cached answer shows a node is
 * known, or `undefined` when `name` is not a DNS-1123 name: anything else
 * would be read as a path (`../namespaces/…`) and answer whether some other
 * entry exists.
 */
export function nodeReadOf(name: string | undefined): ClassifiedRequest | undefined {
  if (name === undefined || !isDnsSubdomainName(name)) return undefined;
  const nodeTarget = parseApiPath(`/api/v1/nodes/${name}`);
  return nodeTarget.ok ? classifyRequest('GET', nodeTarget.value, 'application/json') : undefined;
}

/** Answers one request while the upstream is unreachable. */
export class OfflineAnswers {
  constructor(
    private readonly answers: CachedAnswers,
    private readonly counters: RequestCounters,
  ) {}

  async answer(req: IncomingMessage, res: ServerResponse, classified: ClassifiedRequest, identityKey: string) {
    if (isCacheableRead(classified)) {
      await this.answers.serve(req, res, classified, identityKey);
      return;
    }
    const method = req.method ?? 'GET';
    if (isNodeRegistration(method, classified.path)) {
      const body = await readRequestBody(req, MAX_OFFLINE_WRITE_BODY_BYTES).catch(() => '');
      const name = registeredNodeName(body);
      const nodeRead = nodeReadOf(name);
      const isKnown =
        nodeRead !== undefined &&
        ((await this.answers.has(cacheKeyOf(identityKey, nodeRead))) ||
          (await this.answers.findInCachedList(identityKey, nodeRead.path)) !== undefined);
      const answer = answerOfflineNodeRegistration(name, isKnown);
      this.counters.count(answer.kind === 'already-exists' ? 'write_answered_offline' : 'write_refused_offline');
      sendStatus(res, answer.status);
      return;
    }
    this.counters.count('write_refused_offline');
    req.resume();
    sendStatus(res, offlineRefusal(method, classified.path));
  }
}

/** Reads a request body up to `limit` bytes. */
function readRequestBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.destroy();
        reject(new Error('request body too large'));
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
