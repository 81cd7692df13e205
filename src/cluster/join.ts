/**
 * The join workflow: an edge node joins a cluster with kubeadm's trust
 * model (bootstrap token + CA pin).
 *
 * preflight → discovery → package → runtime → node-join (a worker) or
 * control-plane-join (with --control-plane) → edge (with --enable-edge) →
 * wait-ready → labels
 *
 * Discovery runs on this machine (where edgeadm runs) against the control
 * plane, before anything reaches the host: a wrong token, a wrong pin or an
 * unreachable control plane stop the join with nothing installed. The node's
 * join credential (k3s: `K10<ca hash>::<token>`) is built from the CA that
 * discovery verified.
 */
import { AUTONOMY_DURATION_ANNOTATION, formatAutonomyDuration, type AutonomyDuration } from '../edge/autonomy.js';
import { EdgeadmError, ValidationError } from '../errors.js';
import { EDGE_PROXY_UNIT_NAME } from './edge-proxy-unit.js';
import type { InstallState } from './state.js';
import { KubeClient, corePath, type KubeObject } from '../kube/client.js';
import { kubeCredentialsOf } from '../kube/kubeconfig.js';
import type { Logger } from '../log/run-log.js';
import type { BootstrapToken } from '../trust/bootstrap-token.js';
import { discover, type DiscoveryRequest, type DiscoveryResult } from '../trust/discovery.js';
import type { Phase, PhaseOutcome } from '../workflow/phase.js';
import type { PhaseResult } from '../workflow/runner.js';
import { readHostFile, readHostFiles, waitForAndReadHostFiles } from './host-files.js';
import { controlPlaneJoinPhase, verifyControlPlaneJoin, type ControlPlaneJoinData } from './control-plane-join.js';
import { egressSelectorPhase, nodeTunnelAgentPhase } from './node-tunnel-phase.js';
import {
  edgeAgentConfig,
  edgeNodePhase,
  ensureEdgeSettings,
  resolveEdgeadmBinary,
  runningEdgeadm,
  type EdgeNodeData,
} from './edge-node-phase.js';
import { packagePhase } from './package-phase.js';
import { preflightPhase } from './preflight-phase.js';
import { runClusterWorkflow } from './run-workflow.js';
import type { WorkflowEventSink } from '../workflow/events.js';
import { runtimePhase } from './runtime-phase.js';
import type { JoinRequest } from './join-request.js';
import { withPreparedNode, type NodeHostOptions, type PreparedNode } from './prepare.js';
import { configureAndStartService } from './service-phase.js';

/** How long join waits for the node to be Ready. */
export const NODE_READY_TIMEOUT_MS = 180_000;
/** How often the node is polled. */
export const NODE_READY_POLL_MS = 1_000;

/** What the join phases depend on. */
export interface JoinData extends EdgeNodeData, ControlPlaneJoinData {
  /** What discovery runs on, parsed by the request. */
  discoveryRequest: DiscoveryRequest;
  /** The bootstrap token (the discovery request's). */
  token: BootstrapToken;
  nodeName?: string;
  nodeLabels: Record<string, string>;
  /** `--autonomy-duration`: this edge node's; the cluster's edge setting when absent. */
  autonomyDuration?: AutonomyDuration;
  /**
   * Runs discovery for `discoveryRequest`; absent: {@link discover} itself.
   * A fleet run discovers once for all its hosts (see `fleet join`).
   */
  discover?: (request: DiscoveryRequest) => Promise<DiscoveryResult>;
  /** Filled in by the phases. */
  discovery?: DiscoveryResult;
  node?: { name: string; isReady: boolean };
  /** The node's API client, once made ({@link nodeClient}). */
  nodeClient?: KubeClient;
}

function nodeNameOf(ctx: JoinData): string {
  return ctx.nodeName ?? ctx.facts?.hostname ?? 'node';
}

async function labelsOf(ctx: JoinData): Promise<Record<string, string>> {
  const edge = await edgeAgentConfig(ctx, await ensureDiscovery(ctx));
  return { ...ctx.nodeLabels, ...edge.nodeLabels };
}

/** The annotations an edge node gets: its autonomy duration (src/edge/autonomy.ts). */
async function annotationsOf(ctx: JoinData): Promise<Record<string, string>> {
  if (!ctx.enableEdge) return {};
  const settings = await ensureEdgeSettings(ctx, await ensureDiscovery(ctx));
  return { [AUTONOMY_DURATION_ANNOTATION]: formatAutonomyDuration(ctx.autonomyDuration ?? settings.autonomyDuration) };
}

async function ensureFacts(ctx: JoinData): Promise<void> {
  if (!ctx.facts) ctx.facts = await ctx.host.facts();
}

async function ensureDiscovery(ctx: JoinData): Promise<DiscoveryResult> {
  if (ctx.discovery) return ctx.discovery;
  ctx.discovery = await (ctx.discover ?? ((request) => discover(request, { logger: ctx.logger })))(
    ctx.discoveryRequest,
  );
  return ctx.discovery;
}

/**
 * The node's own API client: its agent's credentials, against the server
 * discovery verified. The files its kubeconfig refers to (a k3s agent's CA,
 * certificate and key) are read in one command, not one each; the client is
 * kept for the phases after (labels). `kubeconfigText`: the kubeconfig, when
 * the caller has read it already.
 */
async function nodeClient(ctx: JoinData, kubeconfigText?: string): Promise<KubeClient> {
  if (ctx.nodeClient) return ctx.nodeClient;
  const discovery = await ensureDiscovery(ctx);
  const path = ctx.distribution.nodeKubeconfigPath;
  const credentials = await kubeCredentialsOf(kubeconfigText ?? (await readHostFile(ctx.host, path)), {
    what: `${ctx.host.name}:${path}`,
    readFiles: (files) => readHostFiles(ctx.host, files),
  });
  // The agent may reach the server through a node-local proxy; this machine goes direct.
  ctx.nodeClient = new KubeClient({ ...credentials, server: discovery.server, caPem: discovery.caPem });
  return ctx.nodeClient;
}

function isNodeReady(node: KubeObject | undefined): boolean {
  const conditions = (node?.status as { conditions?: Array<{ type?: string; status?: string }> } | undefined)
    ?.conditions;
  return conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

function discoveryPhase(): Phase<JoinData> {
  return {
    name: 'discovery',
    summary: 'Verify the API server with the bootstrap token (JWS) and the CA pin',
    isCheck: true,
    async run(ctx) {
      const result = await ensureDiscovery(ctx);
      await verifyControlPlaneJoin(ctx, result);
      // An --enable-edge join of a cluster without edge settings fails here, before the package reaches the host.
      if (ctx.enableEdge) await ensureEdgeSettings(ctx, result);
      ctx.say(
        `verified ${result.server}${result.isCaVerified ? ` (CA pin ${result.matchedPin})` : ' (CA NOT verified: --discovery-token-unsafe-skip-ca-verification)'}`,
      );
      return 'unchanged';
    },
  };
}

/** Writes the agent's configuration (edge additions included) and makes sure it runs with it. */
async function configureAgent(ctx: JoinData): Promise<PhaseOutcome> {
  await ensureFacts(ctx);
  const discovery = await ensureDiscovery(ctx);
  const edge = await edgeAgentConfig(ctx, discovery);
  const config = ctx.distribution.renderAgentConfig({
    nodeName: nodeNameOf(ctx),
    nodeLabels: { ...ctx.nodeLabels, ...edge.nodeLabels },
    // An edge k3s agent's server is the edge-proxy once it runs (it stands in for the supervisor offline).
    server: edge.server ?? discovery.server,
    // A k3s agent hashes the bytes its server serves at /cacerts; discovery read them there when it could.
    joinCredential: ctx.distribution.joinCredential({
      caPem: discovery.servedCaBundle ?? discovery.caPem,
      token: ctx.token,
    }),
    caPem: discovery.caPem,
    ...(edge.nodeTaints.length > 0 ? { nodeTaints: edge.nodeTaints } : {}),
    ...(edge.kubeletKubeconfig ? { kubeletKubeconfig: edge.kubeletKubeconfig } : {}),
  });
  return configureAndStartService(
    ctx,
    config,
    edge.kubeletKubeconfig ? { kubeletKubeconfig: edge.kubeletKubeconfig } : {},
  );
}

function nodeJoinPhase(): Phase<JoinData> {
  return {
    name: 'node-join',
    summary: "Write the node agent's configuration and service unit, and start it",
    runIf: (ctx) => !ctx.isControlPlane,
    run: configureAgent,
  };
}

function waitReadyPhase(): Phase<JoinData> {
  return {
    name: 'wait-ready',
    summary: 'Wait until the Node is registered and Ready',
    isCheck: true,
    async run(ctx) {
      await ensureFacts(ctx);
      const name = nodeNameOf(ctx);
      if (ctx.isDryRun) {
        ctx.say(`Would wait until Node ${name} is Ready`);
        return 'unchanged';
      }
      // Waited for and read in one command.
      const kubeconfig = ctx.distribution.nodeKubeconfigPath;
      const written = await waitForAndReadHostFiles(ctx.host, [kubeconfig], {
        timeoutMs: NODE_READY_TIMEOUT_MS,
        what: `the ${ctx.distribution.name} agent`,
      });
      const client = await nodeClient(ctx, written.get(kubeconfig));
      const deadline = Date.now() + NODE_READY_TIMEOUT_MS;
      let last: string;
      for (;;) {
        try {
          const node = await client.get(corePath('nodes', { name }));
          if (isNodeReady(node)) break;
          last = node ? 'registered, not Ready' : 'not registered yet';
        } catch (error) {
          last = (error as Error).message;
        }
        if (Date.now() > deadline) {
          throw new EdgeadmError(`Node ${name} was not Ready within ${NODE_READY_TIMEOUT_MS / 1000} s: ${last}`, {
            code: 'E_NODE_NOT_READY',
            hints: ['Look at the agent log on the node (journalctl -u k3s-agent, or /var/lib/edgeadm/services).'],
          });
        }
        await new Promise((resolve) => setTimeout(resolve, NODE_READY_POLL_MS));
      }
      ctx.node = { name, isReady: true };
      ctx.say(`Node ${name} is Ready`);
      return 'unchanged';
    },
  };
}

function labelsPhase(): Phase<JoinData> {
  return {
    name: 'labels',
    summary: 'Make sure the Node carries the labels asked for (and, with --enable-edge, its autonomy duration)',
    // Nothing to check when nothing was asked for: "already done" would claim work that was never requested.
    runIf: (ctx) => ctx.enableEdge || Object.keys(ctx.nodeLabels).length > 0,
    skipReason: () => 'no --node-labels given',
    async run(ctx) {
      await ensureFacts(ctx);
      const wanted = await labelsOf(ctx);
      const wantedAnnotations = await annotationsOf(ctx);
      const name = nodeNameOf(ctx);
      if (Object.keys(wanted).length === 0 && Object.keys(wantedAnnotations).length === 0) return 'unchanged';
      const listed = (values: Record<string, string>): string =>
        Object.entries(values)
          .map(([k, v]) => `${k}=${v}`)
          .join(', ');
      if (ctx.isDryRun) {
        if (Object.keys(wanted).length > 0) ctx.say(`Would label Node ${name}: ${listed(wanted)}`);
        if (Object.keys(wantedAnnotations).length > 0)
          ctx.say(`Would annotate Node ${name}: ${listed(wantedAnnotations)}`);
        return 'unchanged';
      }
      const client = await nodeClient(ctx);
      const path = corePath('nodes', { name });
      const node = await client.get(path);
      const differing = (want: Record<string, string>, have: Record<string, string>): Record<string, string> =>
        Object.fromEntries(Object.entries(want).filter(([key, value]) => have[key] !== value));
      const missing = differing(wanted, node?.metadata?.labels ?? {});
      const missingAnnotations = differing(wantedAnnotations, node?.metadata?.annotations ?? {});
      if (Object.keys(missing).length === 0 && Object.keys(missingAnnotations).length === 0) return 'unchanged';
      await client.mergePatch(path, {
        metadata: {
          ...(Object.keys(missing).length > 0 ? { labels: missing } : {}),
          ...(Object.keys(missingAnnotations).length > 0 ? { annotations: missingAnnotations } : {}),
        },
      });
      if (Object.keys(missing).length > 0) ctx.say(`labelled Node ${name}: ${Object.keys(missing).join(', ')}`);
      if (Object.keys(missingAnnotations).length > 0) ctx.say(`annotated Node ${name}: ${listed(missingAnnotations)}`);
      return 'changed';
    },
  };
}

/** Whether the cluster another control plane joins is an edge cluster (its edge settings exist). */
async function isJoiningEdgeCluster(ctx: JoinData): Promise<boolean> {
  try {
    await ensureEdgeSettings(ctx, await ensureDiscovery(ctx));
    return true;
  } catch (error) {
    if (error instanceof EdgeadmError && error.code === 'E_EDGE_NOT_ENABLED') return false;
    throw error;
  }
}

/** The join phase tree. */
export function joinPhases(): Phase<JoinData>[] {
  return [
    preflightPhase<JoinData>(),
    discoveryPhase(),
    packagePhase<JoinData>(),
    runtimePhase<JoinData>(),
    nodeJoinPhase(),
    egressSelectorPhase<JoinData>({ isEdgeCluster: isJoiningEdgeCluster }),
    controlPlaneJoinPhase<JoinData>({ nodeName: nodeNameOf, discovery: ensureDiscovery }),
    edgeNodePhase<JoinData>({ nodeName: nodeNameOf, discovery: ensureDiscovery, configureAgent }),
    waitReadyPhase(),
    labelsPhase(),
    nodeTunnelAgentPhase<JoinData>({ nodeName: nodeNameOf, discovery: ensureDiscovery }),
  ];
}

/** What {@link runJoin} runs: the parsed request on a prepared host. */
export interface JoinOptions {
  request: JoinRequest;
  /** The host connected, with its package, distribution, service manager and state. */
  node: PreparedNode;
  logger: Logger;
  onLine: (line: string) => void;
  /** Told every phase's start and end as it happens (progress for the fleet and `--output jsonl`). */
  onEvent?: WorkflowEventSink;
  /** Runs discovery (the request's); absent: each join discovers for itself. */
  discover?: (request: DiscoveryRequest) => Promise<DiscoveryResult>;
}

/** What join reports (`--json`). */
export interface JoinResult {
  host: string;
  isDryRun: boolean;
  phases: PhaseResult[];
  isChanged: boolean;
  server?: string;
  node?: { name: string; isReady: boolean };
  plan?: string[];
}

/**
 * Refuses a join without --enable-edge on a node joined with it: the join
 * would make it a plain node and leave its edge-proxy running orphaned.
 *
 * @throws {ValidationError} `E_EDGE_JOIN_MISMATCH`.
 */
export function checkEdgeJoinMatches(state: InstallState, isEdge: boolean, hostName: string): void {
  if (isEdge || !state.services.includes(EDGE_PROXY_UNIT_NAME)) return;
  throw new ValidationError(
    `${hostName} was joined with --enable-edge (it runs ${EDGE_PROXY_UNIT_NAME}); joining it again without --enable-edge would make it a plain node and orphan its edge-proxy`,
    {
      code: 'E_EDGE_JOIN_MISMATCH',
      hints: [
        'Join it with --enable-edge, as before (in an inventory: edge: true on its group, or edgeadm_edge: true in an Ansible one).',
        'To make it a plain node, reset it first (edgeadm reset --host … --force), then join it without --enable-edge.',
      ],
    },
  );
}

/** Runs join on a prepared host. */
export async function runJoin(options: JoinOptions): Promise<JoinResult> {
  const { request, node } = options;
  checkEdgeJoinMatches(node.state.state, request.enableEdge, node.host.name);
  const ctx: JoinData = {
    host: node.host,
    isDryRun: request.run.isDryRun,
    role: request.isControlPlane ? 'control-plane' : 'worker',
    isJoining: true,
    isControlPlane: request.isControlPlane,
    ...(request.certificateKey ? { certificateKey: request.certificateKey } : {}),
    distribution: node.distribution,
    serviceManager: node.serviceManager,
    state: node.state,
    package: node.package,
    ignorePreflightErrors: request.run.ignorePreflightErrors,
    logger: options.logger,
    say: () => undefined,
    discoveryRequest: request.discovery,
    ...(options.discover ? { discover: options.discover } : {}),
    token: request.discovery.token,
    nodeLabels: request.nodeLabels,
    enableEdge: request.enableEdge,
    ...(request.autonomyDuration ? { autonomyDuration: request.autonomyDuration } : {}),
    ...(request.nodeName ? { nodeName: request.nodeName } : {}),
    // Decided before any phase runs, so a join that cannot install the edge-proxy installs nothing.
    ...(request.enableEdge
      ? {
          edgeadmBinary: resolveEdgeadmBinary({
            packageName: node.package.manifest.name,
            packageFiles: node.package.manifest.files.map((file) => file.path),
            binDir: node.distribution.binDir,
            ...runningEdgeadm(),
          }),
        }
      : {}),
  };
  const report = await runClusterWorkflow(joinPhases(), ctx, {
    skipPhases: request.run.skipPhases,
    ...(request.run.only ? { only: request.run.only } : {}),
    onLine: options.onLine,
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
  });
  await ctx.state.save();
  return {
    host: node.host.name,
    isDryRun: request.run.isDryRun,
    phases: report.phases,
    isChanged: report.changed,
    ...(ctx.discovery ? { server: ctx.discovery.server } : {}),
    ...(ctx.node ? { node: ctx.node } : {}),
    ...(request.run.isDryRun ? { plan: report.plan } : {}),
  };
}

/** How {@link joinHost} reaches the host and reports. */
export type JoinHostOptions = NodeHostOptions;

/** `edgeadm join`: verifies the package, connects, runs join, and closes the connection. */
export function joinHost(request: JoinRequest, options: JoinHostOptions): Promise<JoinResult> {
  return withPreparedNode(request, options, (node) =>
    runJoin({
      request,
      node,
      logger: options.logger,
      onLine: options.onLine,
      ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    }),
  );
}
