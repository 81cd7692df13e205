/**
 * The attention list's reasons in words, as the "Needs attention" page and
 * the fleet page name them. Pure: the time is passed in (the hub's, from
 * the list, so that ages agree with its thresholds). Its imports name
 * their `.js` files: the unit tests type-check it under the project's
 * NodeNext resolution too.
 */
import { ago, until } from './format.js';
import type { AttentionReason, AttentionReasonKind } from './types.js';

/** Each reason's name, in the order of severity the hub sorts by. */
export const REASON_TITLES: Record<AttentionReasonKind, string> = {
  offline: 'Offline',
  'rollout-halted': 'Rollout halted',
  'nodes-not-ready': 'Nodes not Ready',
  'certificate-expiring': 'Certificate expiring',
  held: 'Held',
};

/** The words for the certificate kinds an agent reports. */
export const CERTIFICATE_TITLES = {
  'cluster-ca': 'cluster CA',
  'apiserver-serving': 'API server',
  'hub-client': 'agent’s hub client',
} as const;

/** Most node names spelled out; the rest are counted. */
const MAX_NAMES_SHOWN = 5;

/** One reason in words, after its title: "last seen 3 h ago", "1 of 3 nodes not Ready: node-b". */
export function reasonText(reason: AttentionReason, now: number): string {
  switch (reason.kind) {
    case 'offline':
      return reason.isNeverConnected ? 'never connected' : `last seen ${ago(reason.since, now)}`;
    case 'rollout-halted':
      return reason.rollouts.map((r) => `rollout ${r.rollout} halted (${r.phase} here)`).join(', ');
    case 'nodes-not-ready': {
      const shown = reason.notReady.slice(0, MAX_NAMES_SHOWN).join(', ');
      const more = reason.notReady.length > MAX_NAMES_SHOWN ? ` +${reason.notReady.length - MAX_NAMES_SHOWN}` : '';
      const missing = reason.total - reason.ready;
      return `${missing} of ${reason.total} nodes not Ready${shown === '' ? '' : `: ${shown}${more}`}`;
    }
    case 'certificate-expiring':
      return reason.certificates
        .map((c) => {
          const at = Date.parse(c.notAfter);
          return `${CERTIFICATE_TITLES[c.kind]} certificate ${at < now ? 'expired' : 'expires'} ${until(c.notAfter, now)}`;
        })
        .join(', ');
    case 'held':
      return `held by ${reason.by}: ${reason.reason}`;
  }
}
