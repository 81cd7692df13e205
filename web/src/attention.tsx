/**
 * "Needs attention": the clusters that need someone now, each with its
 * reasons, most severe first; filtered, sorted and paged by the hub, the
 * filters in the URL so that the fleet page can link to each reason.
 */
import { useEffect, useState } from 'preact/hooks';
import { ErrorNote, Loading, Pager, StateBadge, useData } from './components';
import { ago } from './format';
import { useLive } from './live';
import { REASON_TITLES, reasonText } from './reasons';
import { href, navigate, type Route } from './router';
import type { AttentionPage, AttentionReasonKind } from './types';

const PAGE_SIZE = 50;
const FILTER_KEYS = ['reason', 'selector', 'offlineFor', 'certsWithin', 'sort', 'order'] as const;
const REASONS = Object.keys(REASON_TITLES) as AttentionReasonKind[];
const OFFLINE_FOR: [string, string][] = [
  ['', 'any time'],
  ['300', '5 minutes'],
  ['3600', '1 hour'],
  ['86400', '1 day'],
];
const CERTS_WITHIN: [string, string][] = [
  ['7', '7 days'],
  ['14', '14 days'],
  ['', '30 days'],
  ['90', '90 days'],
];

function paramsOf(route: Route): Record<string, string | undefined> {
  const params: Record<string, string | undefined> = {};
  for (const key of [...FILTER_KEYS, 'offset']) params[key] = route.params.get(key) ?? undefined;
  return params;
}

function SortButton({
  title,
  sortKey,
  params,
  go,
}: {
  title: string;
  sortKey: string;
  params: Record<string, string | undefined>;
  go: (change: Record<string, string | undefined>) => void;
}) {
  const isSorted = (params.sort ?? 'severity') === sortKey;
  const isDescending = params.order === 'desc';
  return (
    <th scope="col" aria-sort={isSorted ? (isDescending ? 'descending' : 'ascending') : 'none'}>
      <button
        type="button"
        class="sort"
        onClick={() => go({ sort: sortKey, order: isSorted && !isDescending ? 'desc' : undefined })}
      >
        {title}
        {isSorted ? (isDescending ? ' ▼' : ' ▲') : ''}
      </button>
    </th>
  );
}

/** The table of one page. */
function Rows({ data }: { data: AttentionPage }) {
  const now = Date.parse(data.now);
  return (
    <tbody>
      {data.rows.map((row) => (
        <tr
          key={row.cluster.name}
          data-cluster={row.cluster.name}
          data-reasons={row.reasons.map((reason) => reason.kind).join(' ')}
        >
          <th scope="row">
            <a href={href(['clusters', row.cluster.name])}>{row.cluster.name}</a>
          </th>
          <td>
            <StateBadge state={row.cluster.state} />
          </td>
          <td title={row.cluster.lastSeen}>
            {row.cluster.state === 'Connected' ? 'connected' : ago(row.cluster.lastSeen, now)}
          </td>
          <td>
            <ul class="plain reasons">
              {row.reasons.map((reason) => (
                <li key={reason.kind} data-reason={reason.kind}>
                  <span class={`badge reason-${reason.kind}`}>{REASON_TITLES[reason.kind]}</span>{' '}
                  {reasonText(reason, now)}
                </li>
              ))}
            </ul>
          </td>
          <td title={row.since}>{row.since === undefined ? '–' : ago(row.since, now)}</td>
        </tr>
      ))}
    </tbody>
  );
}

export function AttentionView({ route }: { route: Route }) {
  const params = paramsOf(route);
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined) query.set(key, value);
  query.set('limit', String(PAGE_SIZE));
  const page = useData<AttentionPage>(`attention?${query.toString()}`);
  useLive('clusters', page.reload);
  useLive('rollouts', page.reload);
  const [selector, setSelector] = useState(params.selector ?? '');
  useEffect(() => setSelector(params.selector ?? ''), [params.selector]);
  const go = (change: Record<string, string | undefined>): void =>
    navigate(href(['attention'], { ...params, offset: undefined, ...change }));
  const data = page.data;
  const offset = Number(params.offset ?? 0);
  return (
    <>
      <h1>Needs attention</h1>
      <form
        class="filters"
        role="search"
        onSubmit={(event) => {
          event.preventDefault();
          go({ selector });
        }}
      >
        <label>
          Reason
          <select name="reason" value={params.reason ?? ''} onChange={(e) => go({ reason: e.currentTarget.value })}>
            <option value="">any</option>
            {REASONS.map((kind) => (
              <option key={kind} value={kind}>
                {REASON_TITLES[kind]}
              </option>
            ))}
          </select>
        </label>
        <label>
          Offline for at least
          <select
            name="offlineFor"
            value={params.offlineFor ?? ''}
            onChange={(e) => go({ offlineFor: e.currentTarget.value })}
          >
            {OFFLINE_FOR.map(([value, title]) => (
              <option key={value} value={value}>
                {title}
              </option>
            ))}
          </select>
        </label>
        <label>
          Certificates expiring within
          <select
            name="certsWithin"
            value={params.certsWithin ?? ''}
            onChange={(e) => go({ certsWithin: e.currentTarget.value })}
          >
            {CERTS_WITHIN.map(([value, title]) => (
              <option key={value} value={value}>
                {title}
              </option>
            ))}
          </select>
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
        <button type="submit">Filter</button>
        {FILTER_KEYS.some((key) => params[key] !== undefined) && (
          <a href={href(['attention'])} class="button secondary">
            Clear
          </a>
        )}
      </form>
      <ErrorNote message={page.error} />
      {data === undefined ? (
        <Loading />
      ) : (
        <>
          <ul class="chips" aria-label="Clusters per reason">
            {REASONS.map((kind) => (
              <li key={kind}>
                <a class="chip" href={href(['attention'], { ...params, offset: undefined, reason: kind })}>
                  {REASON_TITLES[kind]} <strong data-testid={`count-${kind}`}>{data.counts[kind]}</strong>
                </a>
              </li>
            ))}
          </ul>
          {data.haltedRollouts.length > 0 && (
            <p data-testid="halted-rollouts">
              Halted:{' '}
              {data.haltedRollouts.map((rollout, index) => (
                <span key={rollout.name}>
                  {index > 0 && ', '}
                  <a href={href(['rollouts', rollout.name])}>{rollout.name}</a>
                  <span class="muted">
                    {' '}
                    ({rollout.clusters} clusters{rollout.haltReason ? `: ${rollout.haltReason}` : ''})
                  </span>
                </span>
              ))}
            </p>
          )}
          {!data.isRolloutStateKnown && (
            <p class="muted">This hub replica does not run the rollouts: halted rollouts are not shown here.</p>
          )}
          <p aria-live="polite" data-testid="attention-count">
            {data.total === 0
              ? 'No cluster needs attention.'
              : `${offset + 1}–${Math.min(offset + data.rows.length, data.total)} of ${data.total} clusters`}
          </p>
          <div class="table-wrap">
            <table class="clusters attention">
              <caption class="visually-hidden">Clusters that need attention</caption>
              <thead>
                <tr>
                  <SortButton title="Name" sortKey="name" params={params} go={go} />
                  <th scope="col">State</th>
                  <th scope="col">Last seen</th>
                  <SortButton title="Reasons" sortKey="severity" params={params} go={go} />
                  <SortButton title="Since" sortKey="since" params={params} go={go} />
                </tr>
              </thead>
              <Rows data={data} />
            </table>
          </div>
          <Pager page="attention" params={params} offset={offset} pageSize={PAGE_SIZE} total={data.total} />
        </>
      )}
    </>
  );
}
