import { reconcileAdminServer } from '../../cli/hub-advertise.js';
import { resolve } from 'node:path';
import { MAX_PENDING_HANDSHAKES, MAX_QUEUED_HANDSHAKES } from '../../hub/limits.js';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { etcdStoreFlags, parseHubStoreFlags } from '../../cli/flags/hub-store-flags.js';
import { startHub } from '../../hub/server/hub-server.js';
import { serviceLogger, stopSignal } from '../../log/service-logger.js';

/** What `hub serve --json` prints once it has stopped. */
export interface HubServeResult {
  url: string;
  caCertHash: string;
  adminConfig: string;
}

export default class HubServe extends BaseCommand<typeof HubServe> {
  static override summary = 'Run the cloud hub: operator API, agent tunnel endpoint and kube proxy on one HTTPS port.';
  static override description =
    'On first start it makes the hub CA, a serving certificate and an admin credential, writes DIR/admin.yaml ' +
    '(mode 0600) and prints the CA pin. State lives in node:sqlite under --data-dir; a restart keeps every ' +
    'registration. With --store etcd, state, CA and admin credential live in etcd (secrets encrypted with ' +
    '--encryption-key-file) and several replicas can serve one hub. SIGINT or SIGTERM drains the tunnels and stops. ' +
    'GET /metrics serves Prometheus metrics, per cluster for a hub user token; alert rules that name the site: ' +
    'assets/prometheus/edgeadm-hub-rules.yaml in the edgeadm repository (docs/guides/hub-metrics.md).';
  static override examples = [
    '<%= config.bin %> hub serve --listen 0.0.0.0:9443 --data-dir /var/lib/edgeadm-hub --advertise-address hub.example.com',
    '<%= config.bin %> hub serve --listen 0.0.0.0:9443 --data-dir /var/lib/edgeadm-hub --store etcd --etcd-endpoints https://10.0.0.1:2379,https://10.0.0.2:2379,https://10.0.0.3:2379 --etcd-cacert /etc/edgeadm/etcd-ca.crt --etcd-cert /etc/edgeadm/etcd-client.crt --etcd-key /etc/edgeadm/etcd-client.key --encryption-key-file /etc/edgeadm/hub-encryption.key',
  ];
  static override flags = {
    listen: Flags.string({ required: true, summary: 'Address to listen on, host:port.', helpValue: 'ADDR:PORT' }),
    'data-dir': Flags.string({ required: true, summary: 'Where the hub keeps its CA, store and admin.yaml.' }),
    'advertise-address': Flags.string({ summary: 'Host name or IP that agents and users reach the hub by.' }),
    store: Flags.string({
      summary: 'State store: sqlite (one replica, in --data-dir) or etcd (several replicas).',
      default: 'sqlite',
      options: ['sqlite', 'etcd'],
    }),
    ...etcdStoreFlags,
    'ca-cert': Flags.string({
      summary: 'Adopt this CA certificate on first start instead of making one.',
      dependsOn: ['ca-key'],
    }),
    'ca-key': Flags.string({ summary: 'The key of --ca-cert.', dependsOn: ['ca-cert'] }),
    'max-pending-handshakes': Flags.integer({
      min: 1,
      summary: 'Most TLS handshakes in progress at once; connections past it wait their turn.',
      default: MAX_PENDING_HANDSHAKES,
    }),
    'max-queued-handshakes': Flags.integer({
      min: 0,
      summary:
        'Most connections waiting for a handshake place; connections past it are closed before TLS and the agents retry.',
      default: MAX_QUEUED_HANDSHAKES,
    }),
  };

  async run(): Promise<HubServeResult> {
    const { flags } = this;
    const etcd = parseHubStoreFlags(flags.store, flags);
    const logger = serviceLogger({ logger: this.logger, redactor: this.redactor, isVerbose: flags.verbose });
    const signal = stopSignal();
    const hub = await startHub({
      listen: flags.listen,
      dataDir: resolve(flags['data-dir']),
      logger,
      ...(flags['advertise-address'] === undefined ? {} : { advertiseAddress: flags['advertise-address'] }),
      maxPendingHandshakes: flags['max-pending-handshakes'],
      maxQueuedHandshakes: flags['max-queued-handshakes'],
      ...(etcd === undefined ? {} : { etcd }),
      ...(flags['ca-cert'] === undefined ? {} : { caCertFile: flags['ca-cert'], caKeyFile: flags['ca-key'] }),
    });
    this.log(`hub listening on ${hub.url}`);
    this.log(`hub CA pin: ${hub.caPin}`);
    this.log(`admin config: ${hub.adminConfigPath}${hub.isFirstStart ? ' (new)' : ''}`);
    this.log(`web view: ${hub.url}/ui/ (sign in with the token: line of a hub config)`);
    const advertised = reconcileAdminServer({
      adminConfigPath: hub.adminConfigPath,
      listen: flags.listen,
      ...(flags['advertise-address'] === undefined ? {} : { advertiseAddress: flags['advertise-address'] }),
      url: hub.url,
      isSharedStore: etcd !== undefined,
    });
    for (const line of advertised.info) this.log(line);
    for (const warning of advertised.warnings) this.logger.warn(warning);
    await new Promise<void>((done) => signal.addEventListener('abort', () => done(), { once: true }));
    await hub.close();
    return { url: hub.url, caCertHash: hub.caPin, adminConfig: hub.adminConfigPath };
  }
}
