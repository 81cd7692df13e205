/**
 * The agent's loop: keeps one tunnel to the hub open until stopped. Each
 * round dials the next of the hub's addresses (hub-addresses.ts), waits
 * for the tunnel to close, backs off (backoff.ts) and dials again; a
 * tunnel the hub asked to move (MOVE_PATH) dials the replica it named next.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { EdgeadmError, ExitCode } from '../errors.js';
import {
  connectTunnel,
  HUB_FAR_END,
  type AgentConnection,
  type AgentHelloCache,
  type TunnelAgentOptions,
  type TunnelFarEnd,
  type TunnelTlsSession,
} from './agent.js';
import { reconnectDelayMs } from './backoff.js';
import {
  hubCandidates,
  hubServersOf,
  isCandidateFor,
  systemLookup,
  type HubCandidate,
  type HubLookup,
} from './hub-addresses.js';
import { HUB_ADDRESS_LOOKUP_TIMEOUT_MS, TUNNEL_REFUSALS_BEFORE_STOP } from './limits.js';

/** Options of {@link runTunnelAgent}. */
export interface RunTunnelAgentOptions extends TunnelAgentOptions {
  /** Aborting it drains the tunnel and ends the loop. */
  signal: AbortSignal;
  /** Called after each welcome: the place for certificate renewal checks. */
  onConnected?: () => void;
  /**
   * Every hub address (one per replica, `hubServer` among them); the agent
   * keeps one tunnel to one of them and moves to the next when it goes away.
   * Just `hubServer` by default.
   */
  hubServers?: readonly string[];
  /** Resolves hub names to all their addresses; the system resolver by default. */
  lookup?: HubLookup;
  /** A number in [0, 1) for the backoff's jitter; `Math.random` by default. */
  random?: () => number;
  /** Waits `ms` (or until `signal` aborts); a timer by default (tests run the loop without waiting). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

async function lookupWithDeadline(lookup: HubLookup, hostname: string): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<string[]>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error('lookup timed out')), HUB_ADDRESS_LOOKUP_TIMEOUT_MS);
    timer.unref();
  });
  try {
    return await Promise.race([lookup(hostname), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Keeps a tunnel to the hub open until `signal` aborts: connect, wait for
 * the tunnel to close, back off, redial.
 *
 * @throws {EdgeadmError} `E_TUNNEL_REFUSED` (exit 4) once the hub has
 * refused the agent {@link TUNNEL_REFUSALS_BEFORE_STOP} times in a row: its
 * cluster is gone or its certificate revoked, and redialling cannot help.
 */
export async function runTunnelAgent(options: RunTunnelAgentOptions): Promise<void> {
  let attempt = 0;
  let refusals = 0;
  const tlsSession: TunnelTlsSession = options.tlsSession ?? {};
  const helloCache: AgentHelloCache = options.helloCache ?? {};
  const servers = hubServersOf(options.hubServer, options.hubServers);
  const lookup = options.lookup ?? systemLookup;
  const wait =
    options.sleep ?? ((ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal }).then(() => undefined));
  /** The candidates of this round, and the next one to dial: a round ends when each was tried once. */
  let candidates: HubCandidate[] = [];
  let next = 0;
  while (!options.signal.aborted) {
    if (next >= candidates.length) {
      // Names are looked up again at each round: replicas come and go.
      candidates = await hubCandidates(servers, (name) => lookupWithDeadline(lookup, name));
      next = 0;
    }
    const candidate = candidates[next] as HubCandidate;
    next += 1;
    const target = candidate.address === undefined ? candidate.server : `${candidate.server} (${candidate.address})`;
    let connection: AgentConnection | undefined;
    try {
      connection = await connectTunnel({
        ...options,
        hubServer: candidate.server,
        ...(candidate.address === undefined ? {} : { hubAddress: candidate.address }),
        tlsSession,
        helloCache,
      });
      attempt = 0;
      refusals = 0;
      options.logger.info(`tunnel to ${target} is up`);
      options.onConnected?.();
      const onAbort = (): void => void connection?.drain();
      options.signal.addEventListener('abort', onAbort, { once: true });
      await connection.closed;
      options.signal.removeEventListener('abort', onAbort);
      const movedTo = connection.movedTo();
      // Moved: the replica asked for is dialled next if it is one of this agent's own hub addresses.
      const preferred = movedTo === undefined ? -1 : candidates.findIndex((c) => isCandidateFor(c, movedTo));
      if (preferred !== -1) next = preferred;
      if (!options.signal.aborted && movedTo === undefined)
        options.logger.warn(`tunnel to ${(options.farEnd ?? HUB_FAR_END).name} closed; reconnecting`);
    } catch (error) {
      const failure = error as EdgeadmError;
      options.logger.warn(`${failure.code ?? 'E_TUNNEL_CONNECT'}: ${failure.message}`);
      refusals = failure.code === 'E_TUNNEL_REFUSED' ? refusals + 1 : 0;
      if (refusals >= TUNNEL_REFUSALS_BEFORE_STOP) {
        options.upstream.close();
        throw refusedForGood(failure, refusals, options.farEnd ?? HUB_FAR_END);
      }
    }
    if (options.signal.aborted) break;
    // The next dial goes to the next candidate (a replica that went away is not dialled again
    // first), after a jittered delay that grows with each failure in a row.
    const delay = reconnectDelayMs({ attempt, ...(options.random === undefined ? {} : { random: options.random }) });
    attempt += 1;
    options.logger.debug(`redialling the hub in ${delay} ms`);
    await wait(delay, options.signal).catch(() => undefined);
  }
  options.upstream.close();
}

/** The error that ends the agent after the far end's last refusal. */
function refusedForGood(last: EdgeadmError, refusals: number, farEnd: TunnelFarEnd): EdgeadmError {
  return new EdgeadmError(`${last.message} (${refusals} times in a row); the agent stops`, {
    code: 'E_TUNNEL_REFUSED',
    exitCode: ExitCode.Refused,
    hints: [...farEnd.stopHints],
  });
}
