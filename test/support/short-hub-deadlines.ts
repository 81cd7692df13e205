/**
 * Socket deadlines for hubs under attack in tests: short, so a suite sees
 * the hub close a silent or slow socket in a second or two, yet far above
 * what a loopback handshake or request takes. Tunnel liveness stays at the
 * default: real agents, which ping every 10 s, connect to these hubs.
 */
import type { HubDeadlines } from '../../src/hub/front/socket-deadlines.js';

/** The short deadlines (the rest are the hub's defaults). */
export const SHORT_HUB_DEADLINES: Readonly<Partial<HubDeadlines>> = {
  handshakeMs: 1500,
  requestHeadMs: 1000,
  requestMs: 2000,
  requestCheckIntervalMs: 50,
  keepAliveMs: 300,
  // Longer than the whole-request deadline: a watch outlives a slow request, then goes idle.
  streamIdleMs: 5000,
  tunnelAcceptMs: 2000,
};

/** How long a test waits for the hub to close a socket: a safety net, many times every short deadline above. */
export const CLOSE_WAIT_MS = 12_000;
