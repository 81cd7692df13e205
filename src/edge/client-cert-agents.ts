/**
 * The upstream agents of the `--client-cert-map` CNs: one per CN, presenting
 * that CN's certificate, remade when its files change (the kubelet rotates
 * its client certificate in place). The files are looked at no more often
 * than every `CLIENT_CERT_RELOAD_CHECK_MS` (limits.ts).
 *
 * Agents are made through a factory and time is read through a clock, so
 * the reload rule is tested without sockets or waiting.
 */
import { readFileSync, statSync } from 'node:fs';
import type { Agent, AgentOptions } from 'node:https';
import type { Logger } from '../log/run-log.js';
import type { UpstreamClientCertificate } from './upstream-config.js';

/** The agent of one mapped CN, and what it was made from. */
interface CnAgent {
  agent: Agent;
  source: UpstreamClientCertificate;
  /** The files' mtimes when last loaded. */
  stamp: string;
  checkedAt: number;
}

function fileStamp(source: UpstreamClientCertificate): string {
  if (!source.certFile || !source.keyFile) return '';
  return `${statSync(source.certFile).mtimeMs}:${statSync(source.keyFile).mtimeMs}`;
}

/** The per-CN agents. */
export class ClientCertAgents {
  readonly #byCn = new Map<string, CnAgent>();

  /**
   * @param makeAgent makes an agent with the upstream's base options plus a certificate.
   * @param reloadCheckMs how often a CN's files are checked for rotation.
   */
  constructor(
    clientCerts: ReadonlyMap<string, UpstreamClientCertificate>,
    private readonly makeAgent: (tls: Pick<AgentOptions, 'cert' | 'key'>) => Agent,
    private readonly reloadCheckMs: number,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    for (const [cn, source] of clientCerts) {
      this.#byCn.set(cn, {
        agent: makeAgent({ cert: source.certPem, key: source.keyPem }),
        source,
        stamp: fileStamp(source),
        checkedAt: now(),
      });
    }
  }

  /**
   * The agent for a mapped CN, remade when its files changed. The old agent
   * is left to finish its open requests; its idle connections close on
   * their own. `undefined` for a CN that is not mapped.
   */
  agentFor(cn: string): Agent | undefined {
    const entry = this.#byCn.get(cn);
    if (!entry || !entry.source.certFile || !entry.source.keyFile) return entry?.agent;
    if (this.now() - entry.checkedAt < this.reloadCheckMs) return entry.agent;
    entry.checkedAt = this.now();
    try {
      const stamp = fileStamp(entry.source);
      if (stamp !== entry.stamp) {
        const certPem = readFileSync(entry.source.certFile, 'utf8');
        const keyPem = readFileSync(entry.source.keyFile, 'utf8');
        entry.agent = this.makeAgent({ cert: certPem, key: keyPem });
        entry.stamp = stamp;
        this.logger.info(`edge-proxy: reloaded the upstream certificate for CN ${cn}`);
      }
    } catch (error) {
      this.logger.warn(`edge-proxy: cannot reload the upstream certificate for CN ${cn}: ${(error as Error).message}`);
    }
    return entry.agent;
  }

  /** Destroys every CN's current agent. */
  destroy(): void {
    for (const entry of this.#byCn.values()) entry.agent.destroy();
  }
}
