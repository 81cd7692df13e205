import { resolve } from 'node:path';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { etcdStoreFlags, parseEtcdStoreFlags } from '../../cli/flags/hub-store-flags.js';
import type { MigrationSummary } from '../../hub/server/migrate.js';

export default class HubMigrate extends BaseCommand<typeof HubMigrate> {
  static override summary = "Copy a stopped SQLite hub's whole state into etcd, for hub replicas on --store etcd.";
  static override description =
    'Copies clusters, tokens, users, revocations, rollouts (every stored revision), reported copies, pending ' +
    'removals, the hub CA, the TLS ticket key and the admin credential. Agents keep their certificates and ' +
    'reconnect to the replicas without registering again. Stop the hub first. A non-empty --etcd-key-prefix is ' +
    'refused unless --force.';
  static override examples = [
    '<%= config.bin %> hub migrate --to etcd --data-dir /var/lib/edgeadm-hub --etcd-endpoints https://10.0.0.1:2379 --etcd-cacert ca.crt --etcd-cert hub.crt --etcd-key hub.key --encryption-key-file /etc/edgeadm/hub-encryption.key',
  ];
  static override flags = {
    to: Flags.string({ required: true, summary: 'The store to move to.', options: ['etcd'] }),
    'data-dir': Flags.string({ required: true, summary: 'The --data-dir of the SQLite hub to copy.' }),
    ...etcdStoreFlags,
    force: Flags.boolean({ summary: 'Delete what the etcd key prefix holds before copying, instead of refusing.' }),
  };

  async run(): Promise<MigrationSummary> {
    const { flags } = this;
    const etcd = parseEtcdStoreFlags(flags);
    const { migrateSqliteToEtcd } = await import('../../hub/server/migrate.js');
    const summary = await migrateSqliteToEtcd({ dataDir: resolve(flags['data-dir']), etcd, force: flags.force });
    this.log(
      `copied into etcd under ${summary.keyPrefix}: ${summary.clusters} clusters, ${summary.tokens} tokens, ` +
        `${summary.users} users, ${summary.revocations} revocations, ${summary.rollouts} rollouts ` +
        `(${summary.rolloutRevisions} revisions), ${summary.reportedCopies} reported copies, ` +
        `${summary.pendingRemovals} pending removals, and the hub CA and admin credential`,
    );
    this.log('start the replicas with: edgeadm hub serve --store etcd (the same --etcd-… and --encryption-key-file)');
    return summary;
  }
}
