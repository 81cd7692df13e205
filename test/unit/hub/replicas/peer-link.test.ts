/**
 * Who may use the forwarded path between hub replicas (peer-link.ts): only
 * a verified replica certificate, within its validity, with the replicas'
 * organization alone and a replica common name; and the identity a
 * forwarded request carries is taken only when it is well formed.
 */
import type { IncomingMessage } from 'node:http';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AGENT_CERT_ORGANIZATION } from '../../../../src/hub/contract/agent-certificate.js';
import {
  peerIdentityOf,
  PEER_GROUPS_HEADER,
  PEER_USER_HEADER,
  REPLICA_CERT_ORGANIZATION,
  replicaCommonName,
  replicaOfConnection,
} from '../../../../src/hub/replicas/peer-link.js';

const NOW = new Date('2026-06-01T00:00:00Z');

function socketWith(options: {
  authorized?: boolean;
  O?: string | string[];
  CN?: string;
  validTo?: string;
}): TLSSocket {
  const certificate = {
    subject: { O: options.O, CN: options.CN },
    valid_from: 'Jan  1 00:00:00 2026 GMT',
    valid_to: options.validTo ?? 'Jan  1 00:00:00 2027 GMT',
  } as unknown as PeerCertificate;
  return { authorized: options.authorized ?? true, getPeerCertificate: () => certificate } as unknown as TLSSocket;
}

describe('replicaOfConnection', () => {
  it('names the replica of a verified replica certificate', () => {
    const socket = socketWith({ O: REPLICA_CERT_ORGANIZATION, CN: replicaCommonName('3f9c1e0a7b21') });
    expect(replicaOfConnection(socket, NOW)).toBe('3f9c1e0a7b21');
  });

  it('refuses an unverified chain, an agent certificate, an expired one and look-alikes', () => {
    const cn = replicaCommonName('abc');
    expect(replicaOfConnection(socketWith({ authorized: false, O: REPLICA_CERT_ORGANIZATION, CN: cn }), NOW)).toBe(
      undefined,
    );
    expect(replicaOfConnection(socketWith({ O: AGENT_CERT_ORGANIZATION, CN: cn }), NOW)).toBeUndefined();
    expect(replicaOfConnection(socketWith({ O: AGENT_CERT_ORGANIZATION, CN: 'site-1' }), NOW)).toBeUndefined();
    expect(
      replicaOfConnection(socketWith({ O: [AGENT_CERT_ORGANIZATION, REPLICA_CERT_ORGANIZATION], CN: cn }), NOW),
    ).toBeUndefined();
    expect(
      replicaOfConnection(
        socketWith({ O: REPLICA_CERT_ORGANIZATION, CN: cn, validTo: 'Feb  1 00:00:00 2026 GMT' }),
        NOW,
      ),
    ).toBeUndefined();
    expect(replicaOfConnection(socketWith({ O: REPLICA_CERT_ORGANIZATION, CN: 'edgeadm-hub' }), NOW)).toBeUndefined();
    expect(replicaOfConnection(socketWith({ CN: cn }), NOW)).toBeUndefined();
  });

  it('keeps replica names out of cluster names (DNS labels)', () => {
    expect(replicaCommonName('abc')).toContain(':');
  });
});

describe('peerIdentityOf', () => {
  const requestWith = (headers: Record<string, string | undefined>): IncomingMessage =>
    ({ headers }) as unknown as IncomingMessage;

  it('reads a well-formed user and groups', () => {
    expect(
      peerIdentityOf(requestWith({ [PEER_USER_HEADER]: 'ops', [PEER_GROUPS_HEADER]: '["system:masters","dev"]' })),
    ).toEqual({ user: 'ops', groups: ['system:masters', 'dev'] });
  });

  it('takes no identity that is not well formed, whatever the headers hold', () => {
    fc.assert(
      fc.property(
        fc.option(fc.string(), { nil: undefined }),
        fc.option(fc.string(), { nil: undefined }),
        (user, groups) => {
          const identity = peerIdentityOf(requestWith({ [PEER_USER_HEADER]: user, [PEER_GROUPS_HEADER]: groups }));
          if (typeof identity === 'string') return;
          for (const name of [identity.user, ...identity.groups]) {
            expect(name).toMatch(/^[A-Za-z0-9][A-Za-z0-9._@:+-]{0,252}$/);
          }
        },
      ),
    );
    expect(typeof peerIdentityOf(requestWith({ [PEER_GROUPS_HEADER]: '[]' }))).toBe('string');
    expect(typeof peerIdentityOf(requestWith({ [PEER_USER_HEADER]: 'ops' }))).toBe('string');
    expect(typeof peerIdentityOf(requestWith({ [PEER_USER_HEADER]: 'ops\r\nx', [PEER_GROUPS_HEADER]: '[]' }))).toBe(
      'string',
    );
    expect(typeof peerIdentityOf(requestWith({ [PEER_USER_HEADER]: 'ops', [PEER_GROUPS_HEADER]: '[1]' }))).toBe(
      'string',
    );
  });
});
