/** The clusters table: filtered, sorted and paged by the hub; the filters live in the URL. */
import { useEffect, useState } from 'preact/hooks';
import { ErrorNote, Loading, Pager, StateBadge, useData } from './components';
import { ago } from './format';
import { useLive } from './live';
import { href, navigate, type Route } from './router';
import type { ClusterPage } from './types';

const PAGE_SIZE = 50;
const FILTER_KEYS = ['q', 'selector', 'state', 'version', 'offline', 'held', 'sort', 'order'] as const;
const COLUMNS: { key: string; title: string }[] = [
  { key: 'name', title: 'Name' },
  { key: 'state', title: 'State' },
  { key: 'lastSeen', title: 'Last seen' },
  { key: 'version', title: 'Kubernetes' },
  { key: 'nodes', title: 'Nodes' },
];

function paramsOf(route: Route): Record<string, string | undefined> {
  const params: Record<string, string | undefined> = {};
  for (const key of [...FILTER_KEYS, 'offset']) params[key] = route.params.get(key) ?? undefined;
  return params;
}

export function ClustersView({ route }: { route: Route }) {
  const params = paramsOf(route);
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined) query.set(key, value);
  query.set('limit', String(PAGE_SIZE));
  const page = useData<ClusterPage>(`clusters?${query.toString()}`);
  useLive('clusters', page.reload);
  const [text, setText] = useState(params.q ?? '');
  const [selector, setSelector] = useState(params.selector ?? '');
  useEffect(() => {
    setText(params.q ?? '');
    setSelector(params.selector ?? '');
  }, [params.q, params.selector]);
  const go = (change: Record<string, string | undefined>): void =>
    navigate(href(['clusters'], { ...params, offset: undefined, ...change }));
  const sortBy = (key: string): void =>
    go({ sort: key, order: params.sort === key && params.order !== 'desc' ? 'desc' : undefined });
  const data = page.data;
  const offset = Number(params.offset ?? 0);
  return (
    <>
      <h1>Clusters</h1>
      <form
        class="filters"
        role="search"
        onSubmit={(event) => {
          event.preventDefault();
          go({ q: text, selector });
        }}
      >
        <label>
          Text
          <input
            type="search"
            name="q"
            value={text}
            placeholder="name or label"
            onInput={(event) => setText(event.currentTarget.value)}
          />
        </label>
        <label>
          Label selector
          <input
            name="selector"
            value={selector}
            placeholder="env=prod,region!=us"
            onInput={(event) => setSelector(event.currentTarget.value)}
          />
        </label>
        <label>
          State
          <select
            name="state"
            value={params.state ?? ''}
            onChange={(event) => go({ state: event.currentTarget.value })}
          >
            <option value="">any</option>
            <option value="Connected">Connected</option>
            <option value="Disconnected">Disconnected</option>
          </select>
        </label>
        <button type="submit">Filter</button>
        {FILTER_KEYS.some((key) => params[key] !== undefined) && (
          <a href={href(['clusters'])} class="button secondary">
            Clear
          </a>
        )}
      </form>
      {(params.version !== undefined || params.offline !== undefined) && (
        <p class="muted">
          {params.version !== undefined && `Kubernetes ${params.version}. `}
          {params.offline !== undefined && `Disconnected for: ${params.offline}. `}
        </p>
      )}
      <ErrorNote message={page.error} />
      {data === undefined ? (
        <Loading />
      ) : (
        <>
          <p aria-live="polite" data-testid="cluster-count">
            {data.total === 0
              ? 'No clusters match.'
              : `${offset + 1}–${Math.min(offset + data.clusters.length, data.total)} of ${data.total} clusters`}
          </p>
          <div class="table-wrap">
            <table class="clusters">
              <caption class="visually-hidden">Clusters</caption>
              <thead>
                <tr>
                  {COLUMNS.map((column) => {
                    const isSorted = (params.sort ?? 'name') === column.key;
                    return (
                      <th
                        key={column.key}
                        scope="col"
                        aria-sort={isSorted ? (params.order === 'desc' ? 'descending' : 'ascending') : 'none'}
                      >
                        <button type="button" class="sort" onClick={() => sortBy(column.key)}>
                          {column.title}
                          {isSorted ? (params.order === 'desc' ? ' ▼' : ' ▲') : ''}
                        </button>
                      </th>
                    );
                  })}
                  <th scope="col" class="labels">
                    Labels
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.clusters.map((cluster) => (
                  <tr key={cluster.name} data-cluster={cluster.name}>
                    <th scope="row">
                      <a href={href(['clusters', cluster.name])}>{cluster.name}</a>
                    </th>
                    <td>
                      <StateBadge state={cluster.state} />
                      {cluster.hold && <span class="badge held">held</span>}
                    </td>
                    <td title={cluster.lastSeen}>{cluster.state === 'Connected' ? 'now' : ago(cluster.lastSeen)}</td>
                    <td>{cluster.kubernetesVersion ?? 'unknown'}</td>
                    <td class="num">{cluster.nodeCount ?? '–'}</td>
                    <td class="labels">
                      {Object.entries(cluster.labels).map(([key, value]) => (
                        <span class="chip" key={key}>
                          {key}={value}
                        </span>
                      ))}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager page="clusters" params={params} offset={offset} pageSize={PAGE_SIZE} total={data.total} />
        </>
      )}
    </>
  );
}
