/**
 * One cluster: its labels and versions, its health as its agent reported
 * it, its nodes read live through its tunnel, its rollouts.
 */
import { useState } from 'preact/hooks';
import { ApiError, post } from './api';
import { DataTable, ErrorNote, Loading, Section, StateBadge, useData } from './components';
import { HealthSection } from './cluster-health';
import { ago, when } from './format';
import { useLive } from './live';
import { href } from './router';
import type { ClusterDetail, ClusterView, NodeView } from './types';

/** Hold (with a reason) or release the cluster: hub admins only, as `hub clusters hold`. */
function HoldControl({ cluster, onChanged }: { cluster: ClusterView; onChanged: () => void }) {
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string | undefined>(undefined);
  const act = (query: string): void => {
    setBusy(true);
    setFailure(undefined);
    post(`clusters/${encodeURIComponent(cluster.name)}/${query}`)
      .then(() => {
        setReason('');
        onChanged();
      })
      .catch((error: unknown) => setFailure(error instanceof ApiError ? error.message : String(error)))
      .finally(() => setBusy(false));
  };
  return (
    <>
      <ErrorNote message={failure} />
      {cluster.hold ? (
        <button type="button" disabled={busy} onClick={() => act('release')}>
          Release
        </button>
      ) : (
        <form
          class="filters"
          onSubmit={(event) => {
            event.preventDefault();
            act(`hold?reason=${encodeURIComponent(reason)}`);
          }}
        >
          <label>
            Reason
            <input
              name="reason"
              value={reason}
              required
              maxLength={1024}
              onInput={(e) => setReason(e.currentTarget.value)}
            />
          </label>
          <button type="submit" disabled={busy || reason.trim() === ''}>
            Hold
          </button>
        </form>
      )}
      <p class="muted">A held cluster gets no rollout change until it is released.</p>
    </>
  );
}

export function ClusterPageView({ name }: { name: string }) {
  const detail = useData<ClusterDetail>(`clusters/${encodeURIComponent(name)}`);
  const nodes = useData<{ nodes: NodeView[]; isTruncated: boolean }>(
    detail.data?.cluster.state === 'Connected' ? `clusters/${encodeURIComponent(name)}/nodes` : undefined,
  );
  useLive('clusters', detail.reload, (names) => names.includes(name));
  useLive('rollouts', detail.reload);
  const cluster = detail.data?.cluster;
  return (
    <>
      <p>
        <a href={href(['clusters'])}>← Clusters</a>
      </p>
      <h1>
        Cluster {name} {cluster && <StateBadge state={cluster.state} />}
      </h1>
      <ErrorNote message={detail.error} />
      {cluster === undefined ? (
        !detail.error && <Loading />
      ) : (
        <div class="grid">
          <Section title="Overview">
            <dl>
              <dt>State</dt>
              <dd data-testid="cluster-state">
                {cluster.state}
                {cluster.state === 'Disconnected' && `, last seen ${ago(cluster.lastSeen)}`}
              </dd>
              <dt>Last seen</dt>
              <dd>{when(cluster.lastSeen)}</dd>
              <dt>Kubernetes</dt>
              <dd>{cluster.kubernetesVersion ?? 'unknown'}</dd>
              <dt>Registered</dt>
              <dd>{when(cluster.registeredAt)}</dd>
              {cluster.hold && (
                <>
                  <dt>Held</dt>
                  <dd>
                    {cluster.hold.reason} (by {cluster.hold.by} since {when(cluster.hold.since)})
                  </dd>
                </>
              )}
            </dl>
          </Section>
          {detail.data?.mayHold && (
            <Section title="Hold">
              <HoldControl cluster={cluster} onChanged={detail.reload} />
            </Section>
          )}
          <Section title="Labels">
            <ul class="chips">
              {Object.entries(cluster.labels).map(([key, value]) => (
                <li key={key}>
                  <a class="chip" href={href(['clusters'], { selector: `${key}=${value}` })}>
                    {key}={value}
                  </a>
                </li>
              ))}
            </ul>
          </Section>
          <HealthSection cluster={cluster} />
          <Section title="Nodes" isWide>
            {cluster.state !== 'Connected' ? (
              <p class="muted">Not connected: nodes are read live through the tunnel when the cluster is connected.</p>
            ) : (
              <>
                <ErrorNote message={nodes.error} />
                {nodes.data === undefined ? (
                  !nodes.error && <Loading />
                ) : (
                  <DataTable columns={['Node', 'Ready', 'Roles', 'Kubelet']}>
                    {nodes.data.nodes.map((node) => (
                      <tr key={node.name} data-node={node.name}>
                        <th scope="row">{node.name}</th>
                        <td>
                          <StateBadge state={node.ready === 'True' ? 'Ready' : `NotReady`} />
                          {node.isUnschedulable && <span class="badge held">cordoned</span>}
                        </td>
                        <td>{node.roles.join(', ') || '–'}</td>
                        <td>{node.kubeletVersion ?? '–'}</td>
                      </tr>
                    ))}
                  </DataTable>
                )}
              </>
            )}
          </Section>
          <Section title="Rollouts">
            {detail.data?.rollouts.length === 0 && <p class="muted">This cluster takes part in no rollout.</p>}
            <ul class="plain">
              {detail.data?.rollouts.map((rollout) => (
                <li key={rollout.name}>
                  <a href={href(['rollouts', rollout.name])}>{rollout.name}</a> wave {rollout.wave + 1}:{' '}
                  <StateBadge state={rollout.phase} />
                  {rollout.message && <span class="muted"> {rollout.message}</span>}
                </li>
              ))}
            </ul>
          </Section>
        </div>
      )}
    </>
  );
}
