/**
 * The hub's identity and secrets on a REAL three-member etcd: what etcd
 * holds (read with the etcd client directly) contains no secret in clear;
 * replicas share one CA, one ticket key and one admin credential, made
 * once however many start together; a replica with another key file, or
 * none, refuses to start.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEncryptionKeyFileText } from '../../../../src/hub/store/etcd/encryption.js';
import { EtcdConnection } from '../../../../src/hub/store/etcd/etcd-client.js';
import { parseHubConfig } from '../../../../src/hub/contract/hub-config.js';
import { hashUserToken } from '../../../../src/hub/identity/hub-tokens.js';
import { openHubStore, type OpenedHub } from '../../../../src/hub/server/open-store.js';
import {
  etcdConnectionOptionsFor,
  freshEtcdPrefix,
  startEtcdCluster,
  type EtcdTestCluster,
} from '../../../support/etcd-cluster.js';

let etcd: EtcdTestCluster;
beforeAll(async () => {
  etcd = await startEtcdCluster();
});
afterAll(async () => {
  await etcd?.stop();
});

function keyFile(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'hub-key-')), 'encryption.key');
  writeFileSync(path, newEncryptionKeyFileText(), { mode: 0o600 });
  return path;
}

async function openReplica(prefix: string, encryptionKeyFile: string): Promise<OpenedHub & { dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-replica-'));
  const { keyPrefix, ...connection } = etcdConnectionOptionsFor(etcd, prefix);
  const opened = await openHubStore({ dataDir, etcd: { ...connection, keyPrefix, encryptionKeyFile } });
  return { ...opened, dataDir };
}

async function closeReplica(replica: OpenedHub): Promise<void> {
  await replica.store.close();
  await replica.coordination.close();
}

describe('hub identity on etcd', () => {
  it('keeps no secret in clear in etcd: token secrets, the CA key, the ticket key, the admin token, rollout documents and reports', async () => {
    const prefix = freshEtcdPrefix();
    const replica = await openReplica(prefix, keyFile());
    const tokenSecret = `secret-${randomBytes(12).toString('hex')}`;
    await replica.store.addToken({ id: 'abcdef', secret: tokenSecret, createdAt: new Date().toISOString() });
    const pki = await replica.identity.ensurePki(['127.0.0.1']);
    const ticket = await replica.identity.ensureTicketKey(pki.caPin);
    const adminPath = join(replica.dataDir, 'admin.yaml');
    expect(
      await replica.identity.ensureAdmin({ path: adminPath, server: 'https://127.0.0.1:1', caPem: pki.ca.certPem }),
    ).toBe(true);
    const adminToken = parseHubConfig(readFileSync(adminPath, 'utf8'), adminPath).token;
    expect((await replica.store.getToken('abcdef'))?.secret).toBe(tokenSecret);
    // A Rollout may carry Secret objects, and reports carry what clusters say of them (issue #30).
    const secretData = `rollout-secret-${randomBytes(12).toString('hex')}`;
    const statusText = `reported-status-${randomBytes(12).toString('hex')}`;
    const document = {
      apiVersion: 'edgeadm.io/v1alpha1',
      kind: 'Rollout',
      metadata: { name: 'web' },
      spec: {
        resources: [{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: { k: secretData } }],
      },
    };
    const at = new Date().toISOString();
    await replica.store.putRollout(
      {
        name: 'web',
        owner: { user: 'admin', groups: [], clustersSelector: '' },
        revision: 1,
        progress: { revision: 1, state: 'progressing', currentWave: 0, clusters: {} },
        statusVersion: 1,
        createdAt: at,
        updatedAt: at,
      },
      { name: 'web', revision: 1, document, appliedBy: 'admin', appliedAt: at },
    );
    const objects = [{ apiVersion: 'v1', kind: 'Secret', name: 's', status: { note: statusText } }];
    await replica.store.putReportedCopies([{ rollout: 'web', cluster: 'shop-1', revision: '1-a', objects }]);
    expect((await replica.store.getRolloutRevision('web', 1))?.document).toEqual(document);
    expect((await replica.store.listReportedCopies('web'))[0]?.objects).toEqual(objects);
    await closeReplica(replica);

    // Everything under the prefix, as etcd holds it.
    const raw = await EtcdConnection.open(etcdConnectionOptionsFor(etcd, prefix));
    const everything = (await raw.list(prefix)).map((entry) => `${entry.key}=${entry.value}`).join('\n');
    raw.close();
    expect(everything).toContain(`${prefix}tokens/abcdef=`);
    expect(everything).toContain(`${prefix}identity/ca=`);
    expect(everything).not.toContain(tokenSecret);
    expect(everything).not.toContain('PRIVATE KEY');
    const caKeyBody = pki.ca.keyPem
      .split('\n')
      .filter((line) => !line.startsWith('-----'))
      .join('');
    expect(everything).not.toContain(caKeyBody.slice(0, 40));
    expect(everything).not.toContain(ticket.key.toString('base64'));
    expect(everything).not.toContain(ticket.key.toString('hex'));
    expect(everything).not.toContain(adminToken);
    expect(everything).toContain(`${prefix}rollout-revisions/web/`);
    expect(everything).not.toContain(secretData);
    expect(everything).not.toContain(statusText);
  });

  it('gives replicas that start together one CA, one ticket key and one admin credential', async () => {
    const prefix = freshEtcdPrefix();
    const key = keyFile();
    const replicas = await Promise.all([openReplica(prefix, key), openReplica(prefix, key), openReplica(prefix, key)]);
    const pkis = await Promise.all(replicas.map((r) => r.identity.ensurePki(['127.0.0.1'])));
    expect(new Set(pkis.map((p) => p.caPin)).size).toBe(1);
    expect(pkis.filter((p) => p.isNewCa)).toHaveLength(1);
    const tickets = await Promise.all(replicas.map((r) => r.identity.ensureTicketKey(pkis[0]!.caPin)));
    expect(new Set(tickets.map((t) => t.key.toString('hex'))).size).toBe(1);
    const firsts = await Promise.all(
      replicas.map((r) =>
        r.identity.ensureAdmin({
          path: join(r.dataDir, 'admin.yaml'),
          server: 'https://x:1',
          caPem: pkis[0]!.ca.certPem,
        }),
      ),
    );
    expect(firsts.filter(Boolean)).toHaveLength(1);
    const tokens = replicas.map(
      (r) => parseHubConfig(readFileSync(join(r.dataDir, 'admin.yaml'), 'utf8'), 'admin').token,
    );
    expect(new Set(tokens).size).toBe(1);
    expect((await replicas[2]!.store.findUserByTokenHash(hashUserToken(tokens[0]!)))?.isAdmin).toBe(true);
    // Nothing of the identity is written into a replica's data directory but its admin.yaml.
    expect(existsSync(join(replicas[0]!.dataDir, 'pki'))).toBe(false);
    await Promise.all(replicas.map(closeReplica));
  });

  it('refuses to start a replica with another key file, or without one, with a typed error and a hint', async () => {
    const prefix = freshEtcdPrefix();
    const first = await openReplica(prefix, keyFile());
    await first.store.addToken({ id: 'abcdef', secret: 's', createdAt: new Date().toISOString() });
    await closeReplica(first);
    await expect(openReplica(prefix, keyFile())).rejects.toMatchObject({
      code: 'E_HUB_ENCRYPTION_KEY_WRONG',
      hints: expect.arrayContaining([expect.stringContaining('same --encryption-key-file')]),
    });
    await expect(openReplica(prefix, join(tmpdir(), 'no-such-key'))).rejects.toMatchObject({
      code: 'E_HUB_ENCRYPTION_KEY_MISSING',
    });
  });

  it('refuses records changed in etcd behind its back with a typed error, never a crash or a half-read secret', async () => {
    const prefix = freshEtcdPrefix();
    const key = keyFile();
    const replica = await openReplica(prefix, key);
    await replica.store.addToken({ id: 'abcdef', secret: 's', createdAt: new Date().toISOString() });
    const pki = await replica.identity.ensurePki(['127.0.0.1']);
    await replica.identity.ensureAdmin({
      path: join(replica.dataDir, 'admin.yaml'),
      server: 'https://x:1',
      caPem: pki.ca.certPem,
    });
    await closeReplica(replica);
    const raw = await EtcdConnection.open(etcdConnectionOptionsFor(etcd, prefix));
    const stored = async (relative: string): Promise<Record<string, unknown>> =>
      JSON.parse((await raw.get(`${prefix}${relative}`))!.value) as Record<string, unknown>;
    const put = (relative: string, value: string) => raw.client.put(`${prefix}${relative}`).value(value).exec();
    const ca = await stored('identity/ca');
    const admin = await stored('identity/admin');
    /** Each change made by hand, what reads it, and the code it must be refused with. */
    const cases: {
      relative: string;
      value: string;
      read: (r: OpenedHub & { dataDir: string }) => Promise<unknown>;
      code: string;
    }[] = [
      {
        relative: 'identity/ca',
        value: 'not json',
        read: (r) => r.identity.ensurePki([]),
        code: 'E_HUB_STORE_RECORD_INVALID',
      },
      {
        relative: 'identity/ca',
        value: '[]',
        read: (r) => r.identity.ensurePki([]),
        code: 'E_HUB_STORE_RECORD_INVALID',
      },
      {
        relative: 'identity/ca',
        value: JSON.stringify({ ...ca, keyPem: null }),
        read: (r) => r.identity.ensurePki([]),
        code: 'E_HUB_ENCRYPTION_KEY_WRONG',
      },
      {
        // The admin token's envelope put in the CA's place: sealed under another etcd key.
        relative: 'identity/ca',
        value: JSON.stringify({ ...ca, keyPem: admin.token }),
        read: (r) => r.identity.ensurePki([]),
        code: 'E_HUB_ENCRYPTION_KEY_WRONG',
      },
      {
        relative: 'identity/admin',
        value: '"a string"',
        read: (r) => r.identity.ensureAdmin({ path: join(r.dataDir, 'a.yaml'), server: 'https://x:1', caPem: '' }),
        code: 'E_HUB_STORE_RECORD_INVALID',
      },
      {
        relative: 'tokens/abcdef',
        value: '{"id":"abcdef"',
        read: (r) => r.store.getToken('abcdef'),
        code: 'E_HUB_STORE_RECORD_INVALID',
      },
      {
        relative: 'tokens/abcdef',
        value: JSON.stringify({ id: 'abcdef', secret: 42, createdAt: new Date().toISOString() }),
        read: (r) => r.store.getToken('abcdef'),
        code: 'E_HUB_ENCRYPTION_KEY_WRONG',
      },
    ];
    try {
      for (const change of cases) {
        const before = (await raw.get(`${prefix}${change.relative}`))!.value;
        await put(change.relative, change.value);
        const reader = await openReplica(prefix, key).catch((error: unknown) => error);
        if (reader instanceof Error) {
          // Refused at start (the store checks its records as it opens): the same typed error.
          expect({ change: change.value, code: (reader as { code?: string }).code }).toEqual({
            change: change.value,
            code: change.code,
          });
        } else {
          const refused = await change.read(reader as OpenedHub & { dataDir: string }).catch((error: unknown) => error);
          await closeReplica(reader as OpenedHub);
          expect({ change: change.value, code: (refused as { code?: string }).code }).toEqual({
            change: change.value,
            code: change.code,
          });
        }
        await put(change.relative, before);
      }
    } finally {
      raw.close();
    }
  });
});
