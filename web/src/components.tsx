/** Small pieces the views share: loading and error states, badges, a data hook. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, get } from './api';
import { href, navigate } from './router';

/** Loads `path` and loads it again on `reload()` or when `path` changes. */
export function useData<T>(path: string | undefined): {
  data: T | undefined;
  error: string | undefined;
  reload: () => void;
} {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (path === undefined) return;
    let isCurrent = true;
    get<T>(path)
      .then((value) => {
        if (!isCurrent) return;
        setData(value);
        setError(undefined);
      })
      .catch((failure: unknown) => {
        if (isCurrent) setError(failure instanceof ApiError ? `${failure.message} (${failure.code})` : String(failure));
      });
    return () => {
      isCurrent = false;
    };
  }, [path, tick]);
  const reload = useCallback(() => setTick((value) => value + 1), []);
  return { data, error, reload };
}

/**
 * A table of rows under plain column headings, scrolled sideways on a narrow
 * screen; `children` are its rows (`<tr>`, the first cell a row heading).
 */
export function DataTable({ columns, children }: { columns: readonly string[]; children: ComponentChildren }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column} scope="col">
                {column}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** An error message, read out by screen readers. */
export function ErrorNote({ message }: { message: string | undefined }) {
  if (message === undefined) return null;
  return (
    <p class="error" role="alert">
      {message}
    </p>
  );
}

/** A placeholder while loading. */
export function Loading() {
  return (
    <p class="muted" aria-live="polite">
      Loading…
    </p>
  );
}

/** A state, in words and colour (the words carry the meaning; the colour only helps). */
export function StateBadge({ state }: { state: string }) {
  return (
    <span class={`badge state-${state.toLowerCase()}`} data-state={state}>
      {state}
    </span>
  );
}

/** A titled section. */
export function Section({
  title,
  isWide = false,
  children,
}: {
  title: string;
  /** Across the whole grid (a table whose columns need the room). */
  isWide?: boolean;
  children: ComponentChildren;
}) {
  const id = `section-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return (
    <section class={isWide ? 'card wide' : 'card'} aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/** Previous and next page of a paged list (`offset` in the page's query). */
export function Pager({
  page,
  params,
  offset,
  pageSize,
  total,
}: {
  page: string;
  params: Record<string, string | undefined>;
  offset: number;
  pageSize: number;
  total: number;
}) {
  const go = (to: number) => navigate(href([page], { ...params, offset: String(to) }));
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={offset === 0} onClick={() => go(Math.max(0, offset - pageSize))}>
        Previous page
      </button>
      <button type="button" disabled={offset + pageSize >= total} onClick={() => go(offset + pageSize)}>
        Next page
      </button>
    </nav>
  );
}
