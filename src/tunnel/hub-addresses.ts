/**
 * Where an agent may dial its hub: every hub address it was given (one per
 * replica, or a load balancer), and every IP address a hub name resolves to
 * (a DNS name with several A/AAAA records, one per replica). The agent keeps
 * one tunnel to one of them; when that one goes away it moves on to the
 * next, after the jittered backoff of backoff.ts, so that the agents of a
 * replica that died spread over the others instead of arriving at once.
 */
import { isIP } from 'node:net';

/** One place to dial: the hub URL (whose name the certificate must match) and the address to connect to. */
export interface HubCandidate {
  /** `https://host:port` as configured. */
  server: string;
  /** The IP to connect to; absent: connect to the URL's host as it is. */
  address?: string;
}

/** Looks a host name up: all its addresses. */
export type HubLookup = (hostname: string) => Promise<string[]>;

/** The system resolver (`getaddrinfo`, as any dial would use), every address. */
export const systemLookup: HubLookup = async (hostname) => {
  const { lookup } = await import('node:dns/promises');
  const found = await lookup(hostname, { all: true });
  return found.map((entry) => entry.address);
};

/**
 * Every place to dial, in the order given: a URL whose host is a name is
 * expanded into one candidate per address it resolves to (a failed lookup
 * leaves the name itself, so the dial reports the real error).
 */
export async function hubCandidates(servers: readonly string[], lookup: HubLookup): Promise<HubCandidate[]> {
  const out: HubCandidate[] = [];
  for (const server of servers) {
    const hostname = new URL(server).hostname.replace(/^\[|\]$/g, '');
    if (isIP(hostname) !== 0) {
      out.push({ server });
      continue;
    }
    let addresses: string[];
    try {
      addresses = [...new Set(await lookup(hostname))];
    } catch {
      addresses = [];
    }
    if (addresses.length <= 1) out.push({ server });
    else for (const address of addresses) out.push({ server, address });
  }
  return out;
}

/** The hub URLs of an agent: the main one first, then the others, each once. */
export function hubServersOf(hubServer: string, others: readonly string[] = []): string[] {
  return [...new Set([hubServer, ...others])];
}

/**
 * Whether dialling `candidate` reaches the replica at `replicaUrl` (a
 * replica's `https://host:port`): the same URL, or the same address and
 * port when the candidate came from a name with several addresses.
 */
export function isCandidateFor(candidate: HubCandidate, replicaUrl: string): boolean {
  let replica: URL;
  let server: URL;
  try {
    replica = new URL(replicaUrl);
    server = new URL(candidate.server);
  } catch {
    return false;
  }
  if (replica.port !== server.port) return false;
  const host = (url: URL): string => url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (candidate.address === undefined) return host(server) === host(replica);
  return candidate.address.toLowerCase() === host(replica);
}
