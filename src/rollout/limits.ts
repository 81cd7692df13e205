/**
 * Every interval, timeout and size bound of the agent's side of rollouts
 * (copy-agent.ts), in one place. The size of one copy message is part of
 * the hub–agent contract and lives in wire.ts.
 */
import { MAX_COPY_MESSAGE_BYTES } from './wire.js';

/**
 * How often a copy that is not ready yet is read back from the cluster's
 * API server. The server is local to the agent and the read is a GET per
 * object, so a short interval costs little and a wave's readiness reaches
 * the hub within about this long.
 */
export const COPY_POLL_NOT_READY_MS = 2_000;
/**
 * The variable edgeadm's own integration tests shorten
 * {@link COPY_POLL_NOT_READY_MS} with (milliseconds), so that each wave of
 * their rollouts is not waited out for a read-back period in real time. Not
 * for operators: nothing else reads it.
 */
export const TEST_COPY_POLL_NOT_READY_ENV = 'EDGEADM_TEST_COPY_POLL_NOT_READY_MS';
/** Shortest read-back period the test variable may set (the agent must not spin on its API server). */
export const MIN_TEST_COPY_POLL_NOT_READY_MS = 10;
/**
 * How often a ready copy is read back: rarely, only so that the summaries
 * the hub computes from the objects' `.status` stay current (and a copy
 * that stops being ready is noticed).
 */
export const COPY_POLL_READY_MS = 30_000;
/**
 * How long the agent waits before applying a copy again when its API server
 * could not be reached (a failure the cluster may heal from, unlike a
 * refusal, which is reported as failed and not retried).
 */
export const COPY_APPLY_RETRY_MS = 2_000;
/**
 * The most any one request of the agent to its API server may take, from
 * the call until the answer is read: waiting for a free kept-alive
 * connection, connecting, and an answer that trickles in included. The
 * client's idle timeout alone does not cover a connection that is still
 * being opened: against an API server whose accept queue is full, the
 * kernel retries the connect for about two minutes (`tcp_syn_retries`), and
 * the requests queued behind it wait as long. Past this the request fails
 * as unreachable, and the apply is tried again ({@link COPY_APPLY_RETRY_MS})
 * or the copy read back at the next poll. As long as kube-apiserver's own
 * request timeout (60 s): a request the server may still be working on is
 * not abandoned and sent again, which against a server slow from overload
 * would only add to its load (in a 2,500-cluster bench run, requests took
 * over 15 s just to be accepted).
 */
export const COPY_REQUEST_DEADLINE_MS = 60_000;
/**
 * How long a report line may wait for the hub's acknowledgement before the
 * agent writes it again (the rollout's latest line; wire.ts). A line is
 * written again after one to two of these.
 */
export const REPORT_RESEND_MS = 10_000;
/** How long the hub may take to send one copy message's body. */
export const COPY_MESSAGE_READ_TIMEOUT_MS = 60_000;
/** Largest remove message (a rollout name and an owner). */
export const MAX_REMOVE_MESSAGE_BYTES = 64 * 1024;
/** Longest copy revision the agent accepts (`<revision>-<hash>`). */
export const MAX_COPY_REVISION_LENGTH = 128;
/**
 * Most bytes of copy messages the agent reads at once, across streams (a
 * message past it is answered 503 and sent again by the hub): two of the
 * largest copies.
 */
export const MAX_COPY_BYTES_IN_FLIGHT = 2 * MAX_COPY_MESSAGE_BYTES;
