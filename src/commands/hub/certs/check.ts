import { Flags } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { ExitCode } from '../../../errors.js';
import {
  certificateReport,
  readHubCertificates,
  renderCertificateTable,
  type CertificateRow,
} from '../../../hub-client/certificate-report.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';

/** `edgeadm hub certs check`: {@link certificateReport} over the fleet; exit 9 when any needs renewing. */
export default class HubCertsCheck extends BaseCommand<typeof HubCertsCheck> {
  static override summary = 'Report the expiry of every certificate the fleet depends on, soonest first.';
  static override description = [
    "The hub's CA and serving certificate, each cluster's agent certificate for the hub, and the cluster CA and",
    'API server certificate each agent last reported. Exits 9 when a certificate has expired or expires within',
    '--within days, so a scheduled job can alert on it. An agent renews its own certificate online 10 days before',
    'it expires (it lives 30): it counts as EXPIRING only once that renewal is overdue (an agent offline).',
  ].join('\n');
  static override examples = [
    '<%= config.bin %> hub certs check',
    '<%= config.bin %> hub certs check --within 60 --selector env=prod --json',
  ];
  static override flags = {
    ...hubConfigFlags,
    within: Flags.integer({
      summary: 'Days ahead: a certificate expiring sooner is EXPIRING.',
      default: 30,
      min: 0,
      max: 3650,
    }),
    selector: Flags.string({ char: 'l', summary: 'Only clusters whose labels match (k=v,k2!=v2).' }),
  };

  async run(): Promise<{ within: number; certificates: CertificateRow[] }> {
    const config = loadHubConfig(this.flags['hub-config']);
    const [clusters, hub] = await Promise.all([
      new HubClient(config).listClusters(this.flags.selector),
      readHubCertificates(config),
    ]);
    const rows = certificateReport({ clusters, hub, now: new Date(), withinDays: this.flags.within });
    this.log(renderCertificateTable(rows));
    if (rows.some((row) => row.status !== 'ok')) process.exitCode = ExitCode.CertificatesExpiring;
    return { within: this.flags.within, certificates: rows };
  }
}
