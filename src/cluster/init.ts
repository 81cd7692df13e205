/**
 * The init workflow: a lightweight control plane on one host, from an
 * offline install package.
 *
 * preflight → package → runtime → control-plane → wait-ready → bootstrap-token →
 * record-package →
 * edge-addons and edge-autonomy (with --enable-edge) → show-join-command
 *
 * Every phase checks before it changes, so a re-run after success says
 * "already done" for each, and a re-run after a failure completes. Under
 * --dry-run the host is a DryRunHost reading from the real one: phases that
 * need the API server say what they would do instead.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ValidationError } from '../errors.js';
import { KubeClient } from '../kube/client.js';
import { kubeCredentialsOf, mergeKubeconfig, renderKubeconfig, type KubeCredentials } from '../kube/kubeconfig.js';
import type { Logger } from '../log/run-log.js';
import { formatBootstrapToken, generateBootstrapToken, type BootstrapToken } from '../trust/bootstrap-token.js';
import { caPinsOfPem } from '../trust/ca-pin.js';
import { renderClusterInfoKubeconfig } from '../trust/kubeconfig.js';
import { writeSecretFileAtomic } from '../trust/secret-file.js';
import type { Phase } from '../workflow/phase.js';
import type { PhaseResult } from '../workflow/runner.js';
import {
  applyBootstrapObjects,
  applyClusterInfoRbac,
  createBootstrapToken,
  getBootstrapToken,
  signClusterInfo,
} from './bootstrap-tokens.js';
import { waitForApiReady } from './api-ready.js';
import { uploadCertsPhase } from './control-plane-join.js';
import { cgroupDriverOf, type ServerConfigInput } from './distributions/distribution.js';
import { edgeAddonsPhase } from './edge-addons-phase.js';
import { edgeAutonomyPhase } from './edge-autonomy-phase.js';
import { edgeSiteGridPhase } from './edge-site-grid-phase.js';
import { edgeKubeProxyPhase } from './edge-kube-proxy.js';
import { egressSelectorPhase, nodeTunnelServerPhase } from './node-tunnel-phase.js';
import { readHostFile, waitForHostFiles } from './host-files.js';
import { renderJoinCommand } from './join-command.js';
import type { NodeData } from './node-context.js';
import { packagePhase } from './package-phase.js';
import { packageRecordPhase } from './package-record.js';
import { preflightPhase } from './preflight-phase.js';
import { runClusterWorkflow } from './run-workflow.js';
import type { WorkflowEventSink } from '../workflow/events.js';
import { runtimePhase } from './runtime-phase.js';
import type { InitRequest } from './init-request.js';
import { withPreparedNode, type NodeHostOptions, type PreparedNode } from './prepare.js';
import { configureAndStartService } from './service-phase.js';

/** How long init waits for the API server to be ready. */
export const API_READY_TIMEOUT_MS = 180_000;
/** How often readiness is polled. */
export const API_READY_POLL_MS = 500;

/** What the init phases depend on: the parsed request, the prepared host, and what the phases find. */
export interface InitData extends NodeData, Omit<InitRequest, 'distribution' | 'run'> {
  /** Filled in by the phases. */
  server?: string;
  caPem?: string;
  admin?: KubeCredentials;
  token?: BootstrapToken | undefined;
  joinCommand?: string;
  controlPlaneJoinCommand?: string;
  kubeconfigWritten?: { path: string; context: string; isMerged: boolean };
}

function serverOf(ctx: InitData): string {
  return `https://${advertiseAddressOf(ctx)}:${ctx.distribution.apiPort}`;
}

/** Where joining nodes reach the API server: the control-plane endpoint, else the advertised address. */
function joinAddressOf(ctx: InitData): string {
  const endpoint = ctx.controlPlaneEndpoint;
  if (endpoint) return /:\d+$/.test(endpoint) ? endpoint : `${endpoint}:${ctx.distribution.apiPort}`;
  return `${advertiseAddressOf(ctx)}:${ctx.distribution.apiPort}`;
}

function advertiseAddressOf(ctx: InitData): string {
  if (ctx.advertiseAddress) return ctx.advertiseAddress;
  const address = ctx.facts?.addresses.find((a) => a.family === 'inet' && a.scope === 'global')?.address;
  if (!address) {
    throw new ValidationError(`cannot tell which address ${ctx.host.name} should advertise`, {
      code: 'E_NO_ADVERTISE_ADDRESS',
      hints: ['Pass --apiserver-advertise-address.'],
    });
  }
  return address;
}

/** Facts are collected by preflight; a single-phase run collects them itself. */
async function ensureFacts(ctx: InitData): Promise<void> {
  if (!ctx.facts) ctx.facts = await ctx.host.facts();
}

function nodeNameOf(ctx: InitData): string {
  return ctx.nodeName ?? ctx.facts?.hostname ?? 'control-plane';
}

async function adminClient(ctx: InitData): Promise<KubeClient> {
  if (ctx.admin) return new KubeClient(ctx.admin);
  await ensureFacts(ctx);
  const text = await readHostFile(ctx.host, ctx.distribution.adminKubeconfigPath);
  const credentials = await kubeCredentialsOf(text, {
    what: `${ctx.host.name}:${ctx.distribution.adminKubeconfigPath}`,
    readFile: (path) => readHostFile(ctx.host, path),
  });
  ctx.caPem = await readHostFile(ctx.host, ctx.distribution.caPath);
  // The distribution writes a loopback address; this machine reaches the advertised one.
  ctx.admin = { ...credentials, server: serverOf(ctx), caPem: ctx.caPem };
  return new KubeClient(ctx.admin);
}

/**
 * What the control plane's configuration says, from init's options (facts
 * collected): with --control-plane-endpoint, the endpoint as `host:port`
 * (kubeadm's controlPlaneEndpoint) and its host among the certificate's
 * names. Also what the upload-certs phase renders with the certificate key.
 */
export function serverConfigOf(ctx: InitData): ServerConfigInput {
  return {
    nodeName: nodeNameOf(ctx),
    nodeLabels: ctx.nodeLabels,
    cgroupDriver: cgroupDriverOf(ctx.serviceManager.kind),
    advertiseAddress: advertiseAddressOf(ctx),
    certSans: ctx.controlPlaneEndpoint
      ? [...ctx.certSans, ctx.controlPlaneEndpoint.replace(/:\d+$/, '')]
      : ctx.certSans,
    podCidr: ctx.podCidr,
    serviceCidr: ctx.serviceCidr,
    kubernetesVersion: ctx.package.manifest.kubernetesVersion,
    ...(ctx.controlPlaneEndpoint ? { isClusterInit: true, controlPlaneEndpoint: joinAddressOf(ctx) } : {}),
    ...(ctx.enableEdge && ctx.distribution.nodeTunnel ? { isEgressThroughNodeTunnel: true } : {}),
  };
}

function controlPlanePhase(): Phase<InitData> {
  return {
    name: 'control-plane',
    summary: 'Write the distribution configuration and service unit, and start the control plane',
    async run(ctx) {
      await ensureFacts(ctx);
      return configureAndStartService(ctx, ctx.distribution.renderServerConfig(serverConfigOf(ctx)));
    },
  };
}

function waitReadyPhase(): Phase<InitData> {
  return {
    name: 'wait-ready',
    summary: 'Wait for the API server to answer /readyz',
    isCheck: true,
    async run(ctx) {
      await ensureFacts(ctx);
      if (ctx.isDryRun) {
        ctx.say(`Would wait for ${serverOf(ctx)}/readyz, verified with the CA in ${ctx.distribution.caPath}`);
        return 'unchanged';
      }
      await waitForHostFiles(ctx.host, [ctx.distribution.caPath, ctx.distribution.adminKubeconfigPath], {
        timeoutMs: API_READY_TIMEOUT_MS,
        what: `the ${ctx.distribution.name} server`,
      });
      const client = await adminClient(ctx);
      await waitForApiReady(client, {
        timeoutMs: API_READY_TIMEOUT_MS,
        pollMs: API_READY_POLL_MS,
        what: 'the API server',
      });
      ctx.say(`${client.server} is ready`);
      return 'unchanged';
    },
  };
}

function bootstrapTokenPhase(): Phase<InitData> {
  return {
    name: 'bootstrap-token',
    summary:
      'Create the bootstrap token, sign cluster-info with it, and let anonymous users and bootstrap tokens read cluster-info',
    async run(ctx) {
      await ensureFacts(ctx);
      if (ctx.isDryRun) {
        ctx.token = ctx.requestedToken ?? generateBootstrapToken();
        ctx.say(`Would create the bootstrap token Secret kube-system/bootstrap-token-${ctx.token.id}`);
        ctx.say(`Would create or update kube-public/cluster-info (kubeconfig for ${serverOf(ctx)}, JWS per token)`);
        ctx.say(
          'Would apply the Role and RoleBinding that let system:anonymous and system:bootstrappers get cluster-info',
        );
        for (const object of ctx.distribution.bootstrapObjects?.() ?? []) {
          ctx.say(`Would apply the ${object.kind} ${object.metadata?.name} (node bootstrap)`);
        }
        return 'unchanged';
      }
      const client = await adminClient(ctx);
      let isChanged = false;
      const previousId = ctx.state.state.bootstrapTokenId;
      const wanted = ctx.requestedToken;
      const existing = wanted
        ? await getBootstrapToken(client, wanted.id)
        : previousId
          ? await getBootstrapToken(client, previousId)
          : undefined;
      const isUsable = existing && (existing.expires === undefined || existing.expires > new Date());
      if (existing && isUsable && (!wanted || existing.token.secret === wanted.secret)) {
        ctx.token = existing.token;
        ctx.say(`bootstrap token ${existing.token.id} already exists`);
      } else {
        const token = wanted ?? generateBootstrapToken();
        await createBootstrapToken(client, {
          token,
          ttlMs: ctx.tokenTtlMs,
          description: 'The default bootstrap token generated by edgeadm init.',
        });
        ctx.token = token;
        isChanged = true;
        ctx.say(`created bootstrap token ${token.id}`);
      }
      ctx.state.update((s) => ({ ...s, bootstrapTokenId: ctx.token!.id }));
      await ctx.state.save();
      const kubeconfig = renderClusterInfoKubeconfig({ server: `https://${joinAddressOf(ctx)}`, caPem: ctx.caPem! });
      if (await signClusterInfo(client, { kubeconfig })) {
        isChanged = true;
        ctx.say('wrote kube-public/cluster-info, signed with every signing token');
      }
      if (await applyClusterInfoRbac(client)) {
        isChanged = true;
        ctx.say('applied the RBAC that lets anonymous users and bootstrap tokens read cluster-info');
      }
      if (await applyBootstrapObjects(client, ctx.distribution.bootstrapObjects?.() ?? [])) {
        isChanged = true;
        ctx.say(`applied the RBAC that lets ${ctx.distribution.name} nodes join with bootstrap tokens`);
      }
      return isChanged ? 'changed' : 'unchanged';
    },
  };
}

function showJoinCommandPhase(): Phase<InitData> {
  return {
    name: 'show-join-command',
    summary: 'Write the admin kubeconfig where asked and print the join command',
    async run(ctx) {
      await ensureFacts(ctx);
      // A single-phase run (init phase show-join-command) reads what earlier phases made.
      if (!ctx.isDryRun && !ctx.admin) await adminClient(ctx);
      const tokenId = ctx.state.state.bootstrapTokenId;
      if (!ctx.token && ctx.admin && tokenId)
        ctx.token = (await getBootstrapToken(new KubeClient(ctx.admin), tokenId))?.token;
      const token = ctx.token ? formatBootstrapToken(ctx.token) : '<token>';
      const caPin = (ctx.caPem ? caPinsOfPem(ctx.caPem, 'the cluster CA')[0] : undefined) ?? 'sha256:<hash>';
      const address = joinAddressOf(ctx);
      const joinInput = {
        address,
        token,
        caPin,
        installPackagePath: ctx.installPackage,
        distribution: ctx.distribution.name,
      };
      ctx.joinCommand = renderJoinCommand({ ...joinInput, isEdge: ctx.enableEdge });
      if (ctx.isUploadCerts && ctx.certificateKey) {
        // Control planes are never edge nodes (join refuses --control-plane with --enable-edge).
        ctx.controlPlaneJoinCommand = `${renderJoinCommand({ ...joinInput, isEdge: false })} --control-plane --certificate-key ${ctx.certificateKey}`;
      }
      if (ctx.isDryRun || !ctx.admin) {
        if (ctx.kubeconfigOut ?? ctx.userKubeconfigPath) {
          ctx.say(`Would write the admin kubeconfig to ${ctx.kubeconfigOut ?? ctx.userKubeconfigPath}`);
        }
        return 'unchanged';
      }
      const context = `edgeadm-${nodeNameOf(ctx)}`;
      const own = renderKubeconfig(ctx.admin, context);
      let isChanged = false;
      if (ctx.kubeconfigOut) {
        const current = existsSync(ctx.kubeconfigOut) ? readFileSync(ctx.kubeconfigOut, 'utf8') : undefined;
        if (current !== own) {
          mkdirSync(dirname(ctx.kubeconfigOut), { recursive: true });
          writeSecretFileAtomic(ctx.kubeconfigOut, own);
          isChanged = true;
        }
        ctx.kubeconfigWritten = { path: ctx.kubeconfigOut, context, isMerged: false };
      } else if (ctx.userKubeconfigPath) {
        const path = ctx.userKubeconfigPath;
        const current = existsSync(path) ? readFileSync(path, 'utf8') : undefined;
        const merged = mergeKubeconfig(current, own, { setCurrent: true });
        if (merged !== current) {
          mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
          writeSecretFileAtomic(path, merged);
          isChanged = true;
        }
        ctx.kubeconfigWritten = { path, context, isMerged: true };
      }
      if (ctx.kubeconfigWritten) {
        ctx.say(
          `${isChanged ? 'wrote' : 'already wrote'} the admin kubeconfig to ${ctx.kubeconfigWritten.path} (context ${context})`,
        );
      }
      return isChanged ? 'changed' : 'unchanged';
    },
  };
}

/** The init phase tree. */
export function initPhases(): Phase<InitData>[] {
  return [
    preflightPhase<InitData>(),
    packagePhase<InitData>(),
    runtimePhase<InitData>(),
    egressSelectorPhase<InitData>(),
    controlPlanePhase(),
    waitReadyPhase(),
    bootstrapTokenPhase(),
    packageRecordPhase<InitData>({ action: 'init', client: adminClient }),
    uploadCertsPhase<InitData>({ adminClient, serverConfig: serverConfigOf }),
    edgeAddonsPhase<InitData>({ adminClient }),
    edgeKubeProxyPhase<InitData>({ adminClient }),
    edgeAutonomyPhase<InitData>({
      server: async (ctx) => {
        await ensureFacts(ctx);
        return serverOf(ctx);
      },
    }),
    edgeSiteGridPhase<InitData>({
      server: async (ctx) => {
        await ensureFacts(ctx);
        return serverOf(ctx);
      },
      adminClient,
    }),
    nodeTunnelServerPhase<InitData>(),
    showJoinCommandPhase(),
  ];
}

/** What {@link runInit} runs: the parsed request on a prepared host. */
export interface InitOptions {
  request: InitRequest;
  /** The host connected, with its package, distribution, service manager and state. */
  node: PreparedNode;
  logger: Logger;
  onLine: (line: string) => void;
  /** Told every phase's start and end as it happens (progress for the fleet and `--output jsonl`). */
  onEvent?: WorkflowEventSink;
}

/** What init reports (`--json`). The join command holds the token: a credential. */
export interface InitResult {
  host: string;
  isDryRun: boolean;
  phases: PhaseResult[];
  isChanged: boolean;
  server?: string;
  caCertHash?: string;
  joinCommand?: string;
  /** With --upload-certs: the join command for another control plane (holds the certificate key). */
  controlPlaneJoinCommand?: string;
  /** With --upload-certs: the key the upload is encrypted with (given or made; a secret, expires with the upload). */
  certificateKey?: string;
  kubeconfig?: { path: string; context: string; isMerged: boolean };
  plan?: string[];
}

/** Runs init on a prepared host. */
export async function runInit(options: InitOptions): Promise<InitResult> {
  const { distribution: _name, run, ...request } = options.request;
  const { node } = options;
  const ctx: InitData = {
    ...request,
    host: node.host,
    isDryRun: run.isDryRun,
    role: 'control-plane',
    distribution: node.distribution,
    serviceManager: node.serviceManager,
    state: node.state,
    package: node.package,
    ignorePreflightErrors: run.ignorePreflightErrors,
    logger: options.logger,
    say: () => undefined,
  };
  const report = await runClusterWorkflow(initPhases(), ctx, {
    skipPhases: run.skipPhases,
    ...(run.only ? { only: run.only } : {}),
    onLine: options.onLine,
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
  });
  await ctx.state.save();
  return {
    host: node.host.name,
    isDryRun: run.isDryRun,
    phases: report.phases,
    isChanged: report.changed,
    ...(ctx.admin ? { server: ctx.admin.server } : {}),
    ...(ctx.caPem ? { caCertHash: caPinsOfPem(ctx.caPem, 'the cluster CA')[0]! } : {}),
    ...(ctx.joinCommand ? { joinCommand: ctx.joinCommand } : {}),
    ...(ctx.controlPlaneJoinCommand ? { controlPlaneJoinCommand: ctx.controlPlaneJoinCommand } : {}),
    ...(ctx.isUploadCerts && ctx.certificateKey ? { certificateKey: ctx.certificateKey } : {}),
    ...(ctx.kubeconfigWritten ? { kubeconfig: ctx.kubeconfigWritten } : {}),
    ...(run.isDryRun ? { plan: report.plan } : {}),
  };
}

/** How {@link initHost} reaches the host and reports. */
export type InitHostOptions = NodeHostOptions;

/** `edgeadm init`: verifies the package, connects, runs init, and closes the connection. */
export function initHost(request: InitRequest, options: InitHostOptions): Promise<InitResult> {
  return withPreparedNode(request, options, (node) =>
    runInit({
      request,
      node,
      logger: options.logger,
      onLine: options.onLine,
      ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    }),
  );
}
