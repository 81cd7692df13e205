/**
 * The long-running agent as `register-cloud --foreground` and
 * `agent tunnel` run it: read the state, keep the tunnel open, renew the
 * certificate when due, run the rollout copies the hub sends (one
 * CopyAgent for the agent's life, across reconnects), stop cleanly on abort.
 */
import type { Logger } from '../log/run-log.js';
import { readAgentState, type AgentState } from './agent-state.js';
import { hubRoute, proxyDisplay } from '../tunnel/http-proxy.js';
import { runTunnelAgent } from '../tunnel/agent-loop.js';
import { CERT_RENEW_CHECK_INTERVAL_MS } from '../tunnel/limits.js';
import { isRenewalDue, renewAgentCertificate } from './registration.js';
import { readUpstreamKubeconfig, Upstream, type UpstreamCredentials } from '../tunnel/upstream.js';
import type { KubeCredentials } from '../kube/kubeconfig.js';
import { CopyAgent } from '../rollout/copy-agent.js';
import { HealthReporter } from '../health/health-reporter.js';
import { HEALTH_READ_INTERVAL_MS, MIN_TEST_HEALTH_READ_MS, TEST_HEALTH_READ_ENV } from '../health/wire.js';
import {
  COPY_POLL_NOT_READY_MS,
  MIN_TEST_COPY_POLL_NOT_READY_MS,
  TEST_COPY_POLL_NOT_READY_ENV,
} from '../rollout/limits.js';
import { ValidationError } from '../errors.js';

/** Options of {@link runAgentService}. */
export interface AgentServiceOptions {
  dataDir: string;
  logger: Logger;
  signal: AbortSignal;
  /** State already in hand (right after registration); read from `dataDir` otherwise. */
  state?: AgentState;
  /** `--proxy` of `agent tunnel`: overrides the proxy stored at registration. */
  proxy?: string;
  /** The environment HTTPS_PROXY / NO_PROXY are read from; the process's by default. */
  env?: NodeJS.ProcessEnv;
}

/** Runs the agent until `signal` aborts. */
export async function runAgentService(options: AgentServiceOptions): Promise<void> {
  let state = options.state ?? readAgentState(options.dataDir);
  const route = await hubRoute(state.hubServer, { explicit: options.proxy ?? state.proxy, env: options.env });
  if (route.proxy !== undefined)
    options.logger.info(`dialling the hub through the HTTP proxy ${proxyDisplay(route.proxy)}`);
  const credentials = await readUpstreamKubeconfig(state.kubeconfig);
  const upstream = new Upstream(credentials, options.logger);
  const rollouts = new CopyAgent({
    cluster: state.cluster,
    credentials: kubeCredentialsOf(credentials),
    logger: options.logger,
    pollNotReadyMs: copyPollNotReadyMs(options.env ?? process.env),
  });
  const health = new HealthReporter({
    source: upstream,
    logger: options.logger,
    timing: { readMs: healthReadMs(options.env ?? process.env) },
  });
  let isRenewing = false;
  const renewIfDue = async (): Promise<void> => {
    if (isRenewing || !isRenewalDue(state.certPem)) return;
    isRenewing = true;
    try {
      state = await renewAgentCertificate(options.dataDir, state, options.logger, route.agent);
    } catch (error) {
      options.logger.warn(`certificate renewal failed, will retry: ${(error as Error).message}`);
    } finally {
      isRenewing = false;
    }
  };
  const timer = setInterval(() => void renewIfDue(), CERT_RENEW_CHECK_INTERVAL_MS);
  timer.unref();
  try {
    await runTunnelAgent({
      hubServer: state.hubServer,
      ...(state.hubServers === undefined ? {} : { hubServers: state.hubServers }),
      hubCaPem: state.hubCaPem,
      identity: () => ({ cluster: state.cluster, certPem: state.certPem, keyPem: state.keyPem }),
      upstream,
      ...(route.proxy === undefined ? {} : { proxy: route.proxy }),
      logger: options.logger,
      signal: options.signal,
      onConnected: () => void renewIfDue(),
      controlRoutes: [...rollouts.controlRoutes(), health.route()],
    });
  } finally {
    clearInterval(timer);
    rollouts.close();
    health.close();
  }
}

/** The agent's upstream credentials as the kube client takes them (the same server, CA and identity). */
export function kubeCredentialsOf(upstream: UpstreamCredentials): KubeCredentials {
  return {
    contextName: 'edgeadm-agent',
    server: upstream.server,
    ...(upstream.caPem === undefined ? {} : { caPem: upstream.caPem }),
    ...(upstream.token === undefined ? {} : { token: upstream.token }),
    ...(upstream.clientCertPem === undefined ? {} : { clientCertificatePem: upstream.clientCertPem }),
    ...(upstream.clientKeyPem === undefined ? {} : { clientKeyPem: upstream.clientKeyPem }),
  };
}

/**
 * A period edgeadm's own tests shorten with the variable `name`, so that
 * their waits are not spent in real time: `fallback` when unset. Not for
 * operators: nothing else reads these variables.
 *
 * @throws {ValidationError} `code` when the variable is set to anything but a whole number of
 *   milliseconds from `min` to `fallback`.
 */
function testPeriodMs(
  env: NodeJS.ProcessEnv,
  name: string,
  range: { min: number; fallback: number; code: string },
): number {
  const text = env[name];
  if (text === undefined || text === '') return range.fallback;
  const ms = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(ms >= range.min && ms <= range.fallback)) {
    throw new ValidationError(
      `${name}=${JSON.stringify(text)} is not a period from ${range.min} to ${range.fallback} ms`,
      { code: range.code },
    );
  }
  return ms;
}

/**
 * How often a copy that is not ready is read back: {@link COPY_POLL_NOT_READY_MS},
 * unless edgeadm's own tests shorten it with {@link TEST_COPY_POLL_NOT_READY_ENV}.
 *
 * @throws {ValidationError} `E_TEST_COPY_POLL` when the variable is set to anything but a whole
 *   number of milliseconds from {@link MIN_TEST_COPY_POLL_NOT_READY_MS} to the default.
 */
export function copyPollNotReadyMs(env: NodeJS.ProcessEnv): number {
  return testPeriodMs(env, TEST_COPY_POLL_NOT_READY_ENV, {
    min: MIN_TEST_COPY_POLL_NOT_READY_MS,
    fallback: COPY_POLL_NOT_READY_MS,
    code: 'E_TEST_COPY_POLL',
  });
}

/**
 * How often the health reporter lists the nodes: {@link HEALTH_READ_INTERVAL_MS},
 * unless edgeadm's own tests shorten it with {@link TEST_HEALTH_READ_ENV}.
 *
 * @throws {ValidationError} `E_TEST_HEALTH_READ` as {@link copyPollNotReadyMs}.
 */
export function healthReadMs(env: NodeJS.ProcessEnv): number {
  return testPeriodMs(env, TEST_HEALTH_READ_ENV, {
    min: MIN_TEST_HEALTH_READ_MS,
    fallback: HEALTH_READ_INTERVAL_MS,
    code: 'E_TEST_HEALTH_READ',
  });
}
