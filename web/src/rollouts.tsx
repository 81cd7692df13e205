/** Rollouts: the list, and one rollout's waves, counts, summaries and per-cluster rows (failing first). */
import { useState } from 'preact/hooks';
import { ApiError, post } from './api';
import { DataTable, ErrorNote, Loading, Section, StateBadge, useData } from './components';
import { count } from './format';
import { useLive } from './live';
import { href } from './router';
import type { Phase, PhaseCounts, RolloutListItem, RolloutView } from './types';

const PHASES: Phase[] = ['failed', 'offline-pending', 'held', 'applying', 'progressing', 'waiting', 'ready'];
const MAX_ROWS_SHOWN = 500;

function Counts({ counts }: { counts: PhaseCounts }) {
  return (
    <ul class="chips counts">
      {PHASES.filter((phase) => counts[phase] > 0).map((phase) => (
        <li key={phase} class={`chip phase-${phase}`} data-phase={phase}>
          {phase} <strong>{counts[phase]}</strong>
        </li>
      ))}
    </ul>
  );
}

export function RolloutsView() {
  const list = useData<{ rollouts: RolloutListItem[] }>('rollouts');
  useLive('rollouts', list.reload);
  return (
    <>
      <h1>Rollouts</h1>
      <ErrorNote message={list.error} />
      {list.data === undefined ? (
        !list.error && <Loading />
      ) : list.data.rollouts.length === 0 ? (
        <p class="muted">No rollouts you may see.</p>
      ) : (
        <DataTable columns={['Name', 'State', 'Revision', 'Clusters', 'Progress']}>
          {list.data.rollouts.map((rollout) => (
            <tr key={rollout.name}>
              <th scope="row">
                <a href={href(['rollouts', rollout.name])}>{rollout.name}</a>
              </th>
              <td>
                <StateBadge state={rollout.state} />
              </td>
              <td class="num">{rollout.revision}</td>
              <td class="num">{rollout.clusters}</td>
              <td>
                <Counts counts={rollout.counts} />
              </td>
            </tr>
          ))}
        </DataTable>
      )}
    </>
  );
}

export function RolloutPageView({ name }: { name: string }) {
  const status = useData<RolloutView>(`rollouts/${encodeURIComponent(name)}`);
  useLive('rollouts', status.reload, (names) => names.includes(name));
  const [busy, setBusy] = useState<string | undefined>(undefined);
  const [failure, setFailure] = useState<string | undefined>(undefined);
  const act = (action: 'pause' | 'resume' | 'abort'): void => {
    if (action === 'abort' && !confirm(`Abort rollout ${name}? Clusters not yet reached will not get it.`)) return;
    setBusy(action);
    setFailure(undefined);
    post(`rollouts/${encodeURIComponent(name)}/${action}`)
      .then(() => status.reload())
      .catch((error: unknown) => setFailure(error instanceof ApiError ? error.message : String(error)))
      .finally(() => setBusy(undefined));
  };
  const view = status.data;
  return (
    <>
      <p>
        <a href={href(['rollouts'])}>← Rollouts</a>
      </p>
      <h1>
        Rollout {name} {view && <StateBadge state={view.state} />}
      </h1>
      <ErrorNote message={status.error} />
      {view === undefined ? (
        !status.error && <Loading />
      ) : (
        <>
          <p>
            Revision {view.revision}, applied by {view.owner}; wave {view.currentWave + 1} of {view.waves.length}.
          </p>
          {view.haltReason && (
            <p class="error" role="status">
              Halted: {view.haltReason}
            </p>
          )}
          {view.rollbackOf && (
            <p role="status">
              Rolled back: revision {view.rollbackOf.revision} halted ({view.rollbackOf.reason})
            </p>
          )}
          {view.canChange && (
            <div class="actions" role="group" aria-label="Rollout commands">
              {(view.state === 'progressing' || view.state === 'complete') && (
                <button type="button" disabled={busy !== undefined} onClick={() => act('pause')}>
                  Pause
                </button>
              )}
              {view.state === 'paused' && (
                <button type="button" disabled={busy !== undefined} onClick={() => act('resume')}>
                  Resume
                </button>
              )}
              {view.state !== 'aborted' && (
                <button type="button" class="danger" disabled={busy !== undefined} onClick={() => act('abort')}>
                  Abort
                </button>
              )}
            </div>
          )}
          <ErrorNote message={failure} />
          <div class="grid">
            <Section title="Counts">
              <Counts counts={view.counts} />
            </Section>
            <Section title="Waves">
              <ol class="waves">
                {view.waves.map((wave) => (
                  <li key={wave.index}>
                    <span>
                      Wave {wave.index + 1}: {wave.state}, {wave.counts.ready}/{wave.clusters} ready
                    </span>
                    <progress
                      max={wave.clusters}
                      value={wave.counts.ready}
                      aria-label={`Wave ${wave.index + 1}: ${wave.counts.ready} of ${wave.clusters} ready`}
                    />
                    <Counts counts={wave.counts} />
                  </li>
                ))}
              </ol>
            </Section>
            <Section title="Summaries">
              {view.summaries.length === 0 ? (
                <p class="muted">No summaries declared.</p>
              ) : (
                <table>
                  <tbody>
                    {view.summaries.map((summary) => (
                      <tr key={summary.name}>
                        <th scope="row">{summary.name}</th>
                        <td class="num">{summary.value ?? '–'}</td>
                        <td class="muted">from {count(summary.reporting, 'object')}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </Section>
          </div>
          <Section title="Clusters">
            <DataTable columns={['Cluster', 'Wave', 'Phase', 'Message']}>
              {view.clusters.slice(0, MAX_ROWS_SHOWN).map((row) => (
                <tr key={row.cluster} data-cluster={row.cluster}>
                  <th scope="row">
                    <a href={href(['clusters', row.cluster])}>{row.cluster}</a>
                  </th>
                  <td class="num">{row.wave + 1}</td>
                  <td>
                    <StateBadge state={row.phase} />
                  </td>
                  <td>{row.message ?? ''}</td>
                </tr>
              ))}
            </DataTable>
            {view.clusters.length > MAX_ROWS_SHOWN && (
              <p class="muted">
                {MAX_ROWS_SHOWN} of {view.clusters.length} clusters shown, failing first.
              </p>
            )}
          </Section>
        </>
      )}
    </>
  );
}
