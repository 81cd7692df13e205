/**
 * The hub's web view: sign-in, then the fleet, what needs attention, clusters and rollouts, kept
 * current by server-sent events. Served by the hub from memory under /ui/.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, currentSession, onSignedOut, signIn, signOut, type SessionInfo } from './api';
import { AttentionView } from './attention';
import { ClusterPageView } from './cluster';
import { ClustersView } from './clusters';
import { FleetView } from './fleet';
import { startLive } from './live';
import { href, useRoute, type Route } from './router';
import { RolloutPageView, RolloutsView } from './rollouts';
import './style.css';

function SignIn({ onSignedIn }: { onSignedIn: (info: SessionInfo) => void }) {
  const [token, setToken] = useState('');
  const [failure, setFailure] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  return (
    <main id="main" class="signin">
      <h1>edgeadm hub</h1>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          setBusy(true);
          signIn(token)
            .then(onSignedIn)
            .catch((error: unknown) => setFailure(error instanceof ApiError ? error.message : String(error)))
            .finally(() => setBusy(false));
        }}
      >
        <label for="token">Hub user token</label>
        <input
          id="token"
          name="token"
          type="password"
          autoComplete="off"
          required
          value={token}
          onInput={(event) => setToken(event.currentTarget.value)}
        />
        <p class="muted">The token in your hub config (from `edgeadm hub user create`, or the admin's admin.yaml).</p>
        {failure && (
          <p class="error" role="alert">
            {failure}
          </p>
        )}
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}

function Page({ route }: { route: Route }) {
  const [section = 'fleet', name] = route.path;
  if (section === 'clusters' && name !== undefined) return <ClusterPageView key={name} name={name} />;
  if (section === 'clusters') return <ClustersView route={route} />;
  if (section === 'attention') return <AttentionView route={route} />;
  if (section === 'rollouts' && name !== undefined) return <RolloutPageView key={name} name={name} />;
  if (section === 'rollouts') return <RolloutsView />;
  return <FleetView />;
}

function App() {
  const [session, setSession] = useState<SessionInfo | undefined | null>(null);
  const route = useRoute();
  useEffect(() => {
    currentSession()
      .then(setSession)
      .catch(() => setSession(undefined));
    return onSignedOut(() => setSession(undefined));
  }, []);
  useEffect(() => {
    if (!session) return;
    return startLive(() => setSession(undefined));
  }, [session]);
  if (session === null) return <p class="muted">Loading…</p>;
  if (session === undefined) return <SignIn onSignedIn={setSession} />;
  const section = route.path[0] ?? 'fleet';
  const link = (target: string, title: string) => (
    <a href={href([target])} aria-current={section === target ? 'page' : undefined}>
      {title}
    </a>
  );
  return (
    <>
      <button type="button" class="skip" onClick={() => document.getElementById('main')?.focus()}>
        Skip to content
      </button>
      <header>
        <nav aria-label="Main">
          <strong class="brand">edgeadm hub</strong>
          {link('fleet', 'Fleet')}
          {link('attention', 'Needs attention')}
          {link('clusters', 'Clusters')}
          {link('rollouts', 'Rollouts')}
        </nav>
        <div class="who">
          <span>
            {session.user}
            {session.clustersSelector !== '' && <span class="muted"> ({session.clustersSelector})</span>}
          </span>
          <button
            type="button"
            class="secondary"
            onClick={() => {
              void signOut().finally(() => setSession(undefined));
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <Page route={route} />
      </main>
    </>
  );
}

const root = document.getElementById('app');
if (root !== null) render(<App />, root);
