/**
 * A cluster's health as its agent last reported it, on the cluster's page:
 * node readiness, the expiry of its certificates (with the agent's own hub
 * certificate, from the hub's record), and the install package it was
 * installed or last upgraded from.
 */
import { DataTable, Section, StateBadge } from './components';
import { until, utc, when } from './format';
import { CERTIFICATE_TITLES } from './reasons';
import type { CertificateExpiry, ClusterHealth, ClusterView } from './types';

const DAY_MS = 86_400_000;
/** What counts as soon for a certificate on this page: the attention list's default. */
const SOON_MS = 30 * DAY_MS;
/**
 * The agent renews its hub certificate (30 days) with 10 days left: before
 * that it is not soon, whatever SOON_MS says (as the attention list counts
 * it, src/hub/attention/limits.ts).
 */
const HUB_CLIENT_SOON_MS = 10 * DAY_MS;

function Nodes({ nodes }: { nodes: NonNullable<ClusterHealth['nodes']> }) {
  const isAllReady = nodes.ready === nodes.total;
  return (
    <p data-testid="health-nodes">
      <StateBadge state={isAllReady ? 'Ready' : 'NotReady'} /> {nodes.ready} of {nodes.total} nodes Ready
      {nodes.notReady.length > 0 && <>; not Ready: {nodes.notReady.join(', ')}</>}
    </p>
  );
}

function Certificates({ certificates, now }: { certificates: CertificateExpiry[]; now: number }) {
  return (
    <DataTable columns={['Certificate', 'Subject', 'Expires']}>
      {certificates.map((certificate) => {
        const soonMs = certificate.kind === 'hub-client' ? HUB_CLIENT_SOON_MS : SOON_MS;
        const isSoon = Date.parse(certificate.notAfter) - now <= soonMs;
        return (
          <tr key={`${certificate.kind} ${certificate.subject}`} data-certificate={certificate.kind}>
            <th scope="row">{CERTIFICATE_TITLES[certificate.kind]}</th>
            <td>{certificate.subject}</td>
            <td class={isSoon ? 'soon' : undefined}>
              {utc(certificate.notAfter)} ({until(certificate.notAfter, now)})
            </td>
          </tr>
        );
      })}
    </DataTable>
  );
}

/** The Health section; nothing until the agent has reported. */
export function HealthSection({ cluster, now = Date.now() }: { cluster: ClusterView; now?: number }) {
  const health = cluster.health;
  if (health === undefined) return null;
  // The agent's hub certificate is the hub's to know: it issued it, and sees a renewal first.
  const hubClient: CertificateExpiry = {
    kind: 'hub-client',
    subject: `CN=${cluster.name}`,
    notAfter: cluster.certNotAfter,
  };
  const certificates = [
    ...health.certificates.filter((certificate) => certificate.kind !== 'hub-client'),
    hubClient,
  ].sort((a, b) => Date.parse(a.notAfter) - Date.parse(b.notAfter));
  const installed = health.package;
  return (
    <Section title="Health" isWide>
      <p class="muted">Reported by its agent {when(health.reportedAt, now)}.</p>
      {health.nodes === undefined ? (
        <p class="muted">Node readiness not reported (the agent may not list nodes).</p>
      ) : (
        <Nodes nodes={health.nodes} />
      )}
      <Certificates certificates={certificates} now={now} />
      <h3>Installed package</h3>
      {installed === undefined ? (
        <p class="muted">Not reported.</p>
      ) : (
        <dl data-testid="health-package">
          <dt>Package</dt>
          <dd>
            {installed.name} {installed.version} ({installed.distribution})
          </dd>
          <dt>{installed.action === 'init' ? 'Installed' : 'Upgraded'}</dt>
          <dd>{when(installed.at, now)}</dd>
          <dt>Signed by</dt>
          <dd>{installed.signer ?? 'not verified against a pinned key'}</dd>
          <dt>Manifest</dt>
          <dd class="muted">sha256:{installed.manifestSha256}</dd>
        </dl>
      )}
    </Section>
  );
}
