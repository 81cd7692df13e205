/**
 * The human tables of `hub token list` and `hub user list`: what each token
 * or user is, never its secret.
 */
import type { HubTokenView, HubUserView } from '../hub/contract/views.js';
import { columns } from './columns.js';

function labelsCell(labels: Record<string, string> | undefined): string {
  if (labels === undefined) return 'any';
  return Object.entries(labels)
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
}

/** Tokens: id, state, uses left, expiry, the labels their clusters must have. */
export function renderTokenTable(tokens: readonly HubTokenView[]): string {
  return columns([
    ['ID', 'STATE', 'USES LEFT', 'EXPIRES', 'CREATED', 'LABELS'],
    ...tokens.map((token) => [
      token.id,
      token.state,
      token.usagesLeft === undefined ? 'any' : String(token.usagesLeft),
      token.expiresAt ?? 'never',
      token.createdAt,
      labelsCell(token.labels),
    ]),
  ]);
}

/** Users: name, state, the clusters they reach, their groups, expiry. */
export function renderUserTable(users: readonly HubUserView[]): string {
  return columns([
    ['NAME', 'STATE', 'CLUSTERS', 'GROUPS', 'EXPIRES'],
    ...users.map((user) => [
      user.name,
      user.state,
      user.isAdmin ? 'all (admin)' : user.clustersSelector || 'all',
      user.groups.join(',') || '-',
      user.expiresAt ?? 'never',
    ]),
  ]);
}
