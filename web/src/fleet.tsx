/**
 * The fleet at a glance: what needs attention, clusters by state, time
 * offline, version and label; every number links to the list behind it.
 */
import { ErrorNote, Loading, Section, StateBadge, useData } from './components';
import { OFFLINE_LABELS } from './format';
import { useLive } from './live';
import { href } from './router';
import { REASON_TITLES } from './reasons';
import type { AttentionPage, AttentionReasonKind, FleetSummary, OfflineBucket, RolloutListItem } from './types';

/**
 * Which sites need someone now: the counts of the hub's attention list per
 * reason, each a link to the "Needs attention" page filtered by it, and the
 * rollouts halted or with failed clusters, each a link to its page.
 */
function Attention({ attention, rollouts }: { attention: AttentionPage; rollouts: RolloutListItem[] | undefined }) {
  const stuck = (rollouts ?? []).filter((rollout) => rollout.state === 'halted' || rollout.counts.failed > 0);
  const reasons = (Object.keys(REASON_TITLES) as AttentionReasonKind[]).filter((kind) => attention.counts[kind] > 0);
  const isQuiet = attention.total === 0 && stuck.length === 0;
  return (
    <Section title="Needs attention" isWide>
      {isQuiet ? (
        <p class="muted" data-testid="attention-none">
          Nothing: no cluster offline, held, with nodes not Ready or certificates expiring; no rollout halted or
          failing.
        </p>
      ) : (
        <ul class="stats" data-testid="attention">
          {attention.total > 0 && (
            <li>
              <a href={href(['attention'])} class="stat bad">
                <strong data-testid="attention-total">{attention.total}</strong> need attention
              </a>
            </li>
          )}
          {reasons.map((kind) => (
            <li key={kind}>
              <a href={href(['attention'], { reason: kind })} class="stat bad">
                <strong data-testid={`attention-${kind}`}>{attention.counts[kind]}</strong>{' '}
                {REASON_TITLES[kind].toLowerCase()}
              </a>
            </li>
          ))}
          {stuck.map((rollout) => (
            <li key={rollout.name}>
              <a
                href={href(['rollouts', rollout.name])}
                class="stat bad"
                data-testid={`attention-rollout-${rollout.name}`}
              >
                <strong>{rollout.name}</strong>{' '}
                {rollout.state === 'halted' ? 'halted' : `${rollout.counts.failed} failed`}
              </a>
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}

export function FleetView() {
  const fleet = useData<FleetSummary>('fleet');
  const rollouts = useData<{ rollouts: RolloutListItem[] }>('rollouts');
  // Its counts only: one row, the hub counts every reason over the whole list.
  const attention = useData<AttentionPage>('attention?limit=1');
  useLive('clusters', fleet.reload);
  useLive('clusters', attention.reload);
  useLive('rollouts', rollouts.reload);
  useLive('rollouts', attention.reload);
  const summary = fleet.data;
  return (
    <>
      <h1>Fleet</h1>
      <ErrorNote message={fleet.error} />
      {summary === undefined ? (
        <Loading />
      ) : (
        <div class="grid">
          <ErrorNote message={attention.error} />
          {attention.data !== undefined && <Attention attention={attention.data} rollouts={rollouts.data?.rollouts} />}
          <Section title="Clusters by state">
            <ul class="stats">
              <li>
                <a href={href(['clusters'])} class="stat">
                  <strong data-testid="total">{summary.total}</strong> registered
                </a>
              </li>
              <li>
                <a href={href(['clusters'], { state: 'Connected' })} class="stat ok">
                  <strong data-testid="connected">{summary.connected}</strong> connected
                </a>
              </li>
              <li>
                <a href={href(['clusters'], { state: 'Disconnected', sort: 'lastSeen' })} class="stat bad">
                  <strong data-testid="disconnected">{summary.disconnected}</strong> disconnected
                </a>
              </li>
            </ul>
            <h3>Disconnected for</h3>
            <table>
              <tbody>
                {(Object.keys(OFFLINE_LABELS) as OfflineBucket[]).map((bucket) => (
                  <tr key={bucket}>
                    <th scope="row">{OFFLINE_LABELS[bucket]}</th>
                    <td class="num">
                      <a href={href(['clusters'], { state: 'Disconnected', offline: bucket })}>
                        {summary.offline[bucket]}
                      </a>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Section>
          <Section title="Kubernetes versions">
            <table>
              <tbody>
                {summary.versions.map((version) => (
                  <tr key={version.value}>
                    <th scope="row">{version.value}</th>
                    <td class="num">
                      <a href={href(['clusters'], { version: version.value })}>{version.count}</a>
                    </td>
                  </tr>
                ))}
                {summary.otherVersions > 0 && (
                  <tr>
                    <th scope="row">other versions</th>
                    <td class="num">{summary.otherVersions}</td>
                  </tr>
                )}
              </tbody>
            </table>
          </Section>
          <Section title="Labels">
            {summary.labels.length === 0 && <p class="muted">No labels.</p>}
            {summary.labels.map((label) => (
              <div key={label.key} class="label-group">
                <h3>{label.key}</h3>
                <ul class="chips">
                  {label.values.map((value) => (
                    <li key={value.value}>
                      <a class="chip" href={href(['clusters'], { selector: `${label.key}=${value.value}` })}>
                        {value.value} <strong>{value.count}</strong>
                      </a>
                    </li>
                  ))}
                  {label.otherValues > 0 && <li class="muted">+{label.otherValues} in other values</li>}
                </ul>
              </div>
            ))}
          </Section>
          <Section title="Rollouts">
            <ErrorNote message={rollouts.error} />
            {rollouts.data?.rollouts.length === 0 && <p class="muted">No rollouts.</p>}
            <ul class="plain">
              {rollouts.data?.rollouts.map((rollout) => (
                <li key={rollout.name}>
                  <a href={href(['rollouts', rollout.name])}>{rollout.name}</a> <StateBadge state={rollout.state} />{' '}
                  <span class="muted">
                    {rollout.counts.ready}/{rollout.clusters} ready
                    {rollout.counts.failed > 0 ? `, ${rollout.counts.failed} failed` : ''}
                  </span>
                </li>
              ))}
            </ul>
          </Section>
        </div>
      )}
    </>
  );
}
