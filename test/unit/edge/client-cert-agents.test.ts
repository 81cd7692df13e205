import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import type { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ClientCertAgents } from '../../../src/edge/client-cert-agents.js';
import { silentLogger } from '../../../src/log/run-log.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-cert-agents-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('ClientCertAgents', () => {
  it('remakes a CN’s agent when its files change, looking no more often than the check interval', () => {
    const certFile = join(dir, 'kubelet.crt');
    const keyFile = join(dir, 'kubelet.key');
    writeFileSync(certFile, 'cert-1');
    writeFileSync(keyFile, 'key-1');
    utimesSync(certFile, 1000, 1000);
    const made: { cert: unknown; key: unknown; destroyed: boolean }[] = [];
    const makeAgent = (tls: { cert?: unknown; key?: unknown }) => {
      const agent = { cert: tls.cert, key: tls.key, destroyed: false, destroy: () => (agent.destroyed = true) };
      made.push(agent);
      return agent as unknown as Agent;
    };
    let now = 0;
    const certs = new Map([['system:node:edge-1', { certPem: 'cert-1', keyPem: 'key-1', certFile, keyFile }]]);
    const agents = new ClientCertAgents(certs, makeAgent, 5000, silentLogger, () => now);
    const first = agents.agentFor('system:node:edge-1');
    expect(made.map((a) => a.cert)).toEqual(['cert-1']);
    expect(agents.agentFor('system:node:other')).toBeUndefined();

    writeFileSync(certFile, 'cert-2');
    writeFileSync(keyFile, 'key-2');
    utimesSync(certFile, 2000, 2000);
    now = 4999;
    expect(agents.agentFor('system:node:edge-1')).toBe(first); // not looked at yet
    now = 5000;
    const second = agents.agentFor('system:node:edge-1');
    expect(second).not.toBe(first);
    expect(made.map((a) => [a.cert, a.key])).toEqual([
      ['cert-1', 'key-1'],
      ['cert-2', 'key-2'],
    ]);
    expect(made[0]!.destroyed).toBe(false); // left to finish its open requests

    now = 20_000; // files unchanged: the same agent
    expect(agents.agentFor('system:node:edge-1')).toBe(second);
    agents.destroy();
    expect(made[1]!.destroyed).toBe(true);
  });

  it('keeps the agent it has when the files cannot be read, and never reloads a certificate given inline', () => {
    const certFile = join(dir, 'gone.crt');
    const keyFile = join(dir, 'gone.key');
    writeFileSync(certFile, 'c');
    writeFileSync(keyFile, 'k');
    let now = 0;
    let count = 0;
    const makeAgent = () => ({ n: ++count, destroy() {} }) as unknown as Agent;
    const agents = new ClientCertAgents(
      new Map([
        ['files', { certPem: 'c', keyPem: 'k', certFile, keyFile }],
        ['inline', { certPem: 'c', keyPem: 'k' }],
      ]),
      makeAgent,
      10,
      silentLogger,
      () => now,
    );
    const files = agents.agentFor('files');
    const inline = agents.agentFor('inline');
    rmSync(certFile);
    now = 100;
    expect(agents.agentFor('files')).toBe(files);
    expect(agents.agentFor('inline')).toBe(inline);
    expect(count).toBe(2);
  });
});
