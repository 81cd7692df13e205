/**
 * The etcd store flags of `hub serve` and `hub migrate`: the key prefix
 * names at least one segment, so that no hub (and no `hub migrate --force`,
 * which deletes what is under it) takes the whole of etcd.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseEtcdStoreFlags } from '../../../src/cli/flags/hub-store-flags.js';
import { newEncryptionKeyFileText } from '../../../src/hub/store/etcd/encryption.js';

describe('etcd store flags', () => {
  const keyFile = join(mkdtempSync(join(tmpdir(), 'hub-flags-')), 'key');
  writeFileSync(keyFile, newEncryptionKeyFileText(), { mode: 0o600 });
  const parse = (prefix: string) =>
    parseEtcdStoreFlags({
      'etcd-endpoints': 'https://127.0.0.1:2379',
      'etcd-key-prefix': prefix,
      'encryption-key-file': keyFile,
    });

  it('refuses a key prefix that is the whole of etcd, has an empty segment, or lacks a slash', () => {
    for (const prefix of ['/', '//', '/edgeadm//hub/', 'edgeadm/hub/', '/edgeadm/hub', '']) {
      expect(() => parse(prefix), prefix).toThrow(expect.objectContaining({ code: 'E_HUB_STORE_FLAGS' }));
    }
  });

  it('takes a prefix of one or more named segments', () => {
    for (const prefix of ['/edgeadm/hub/', '/hub/', '/a/b/c/']) expect(parse(prefix).keyPrefix).toBe(prefix);
  });
});
