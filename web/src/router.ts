/**
 * Routes live in the URL's fragment (`#/clusters?state=Disconnected`), so
 * every view and filter can be bookmarked and linked, and the hub serves a
 * single page.
 */
import { useEffect, useState } from 'preact/hooks';

/** A parsed route. */
export interface Route {
  path: string[];
  params: URLSearchParams;
}

function parse(hash: string): Route {
  const text = hash.replace(/^#\/?/, '');
  const [path = '', query = ''] = text.split('?');
  return {
    path: path
      .split('/')
      .filter((part) => part !== '')
      .map((part) => decodeURIComponent(part)),
    params: new URLSearchParams(query),
  };
}

/** The current route, updated on navigation. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parse(location.hash));
  useEffect(() => {
    const update = (): void => setRoute(parse(location.hash));
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return route;
}

/** A link target: `#/a/b?k=v` (empty parameters left out). */
export function href(path: string[], params: Record<string, string | undefined> = {}): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== '') query.set(key, value);
  const text = query.toString();
  return `#/${path.map(encodeURIComponent).join('/')}${text === '' ? '' : `?${text}`}`;
}

/** Goes to a route. */
export function navigate(target: string): void {
  location.hash = target;
}
