/**
 * The node tunnel's phases (kubeadm, --enable-edge; see
 * src/node-tunnel/README.md): init's `egress-selector` (before the control
 * plane starts: the API server's EgressSelectorConfiguration, which its
 * static pod reads at start) and `node-tunnel` (the server's service), and
 * join's `node-tunnel` (the node's agent). A distribution without
 * `nodeTunnel` (k3s: its agent's own tunnel) skips them.
 *
 * Everything is recorded in the install state before it is written, so
 * reset stops the services and removes their files.
 */
import { dirname } from 'node:path/posix';
import { EdgeadmError } from '../errors.js';
import type { ServiceUnit } from '../hosts/service-manager.js';
import { renderEgressSelectorConfiguration } from '../node-tunnel/egress-config.js';
import { EGRESS_CONFIG_PATH, EGRESS_DIR, EGRESS_SOCKET_PATH, NODE_TUNNEL_PORT } from '../node-tunnel/limits.js';
import type { DiscoveryResult } from '../trust/discovery.js';
import type { Phase, PhaseOutcome } from '../workflow/phase.js';
import { packagedEdgeadm, type EdgeadmBinary } from './edge-node-phase.js';
import type { NodeData } from './node-context.js';
import {
  NODE_TUNNEL_AGENT_DATA_DIR,
  NODE_TUNNEL_AGENT_UNIT_NAME,
  NODE_TUNNEL_SERVER_DATA_DIR,
  NODE_TUNNEL_SERVER_UNIT_NAME,
  renderNodeTunnelAgentUnit,
  renderNodeTunnelServerUnit,
} from './node-tunnel-units.js';

/** What the phases need of a workflow. */
export interface NodeTunnelData extends NodeData {
  enableEdge: boolean;
  /**
   * Another control plane joining an edge cluster (join --control-plane):
   * kubeadm gives its API server the cluster's flags, the egress selector's
   * among them, so it needs the same file and server. Decided by the join's
   * egress-selector phase.
   */
  isEdgeCluster?: boolean;
}

const isNodeTunnelled = (ctx: NodeTunnelData): boolean =>
  (ctx.enableEdge || ctx.isEdgeCluster === true) && ctx.distribution.nodeTunnel !== undefined;

/** Uploads the binary if this edgeadm is it, records and installs `unit`, and makes sure it runs. */
async function installService(
  ctx: NodeData,
  options: { unit: ServiceUnit; dataDir: string; binary: EdgeadmBinary; extraFiles?: string[] },
): Promise<PhaseOutcome> {
  const { host, state, serviceManager } = ctx;
  let isChanged = false;
  if (options.binary.kind === 'upload') {
    state.file(options.binary.path);
    await state.save();
    const upload = await host.put(options.binary.from, options.binary.path, {
      mode: 0o755,
      sudo: true,
      description: `upload this edgeadm to ${options.binary.path}`,
    });
    if (!upload.skipped) isChanged = true;
  }
  await state.claimDirectory(options.dataDir);
  for (const file of [...serviceManager.filesOf(options.unit.name), ...(options.extraFiles ?? [])]) {
    await state.ensureDirectory(dirname(file));
    state.file(file);
  }
  state.service(options.unit.name);
  await state.save();
  const isUnitChanged = await serviceManager.install(host, options.unit);
  const outcome = await serviceManager.ensureRunning(host, options.unit, { isRestartNeeded: isUnitChanged });
  if (isUnitChanged || outcome !== 'already-running') isChanged = true;
  ctx.say(outcome === 'already-running' ? `${options.unit.name} already running` : `${options.unit.name} ${outcome}`);
  return isChanged ? 'changed' : 'unchanged';
}

/**
 * The API server's egress selector configuration, written before the control
 * plane starts: by init with --enable-edge, and by join --control-plane when
 * `isEdgeCluster` says the cluster it joins is an edge cluster.
 */
export function egressSelectorPhase<C extends NodeTunnelData>(
  deps: { isEdgeCluster?: (ctx: C) => Promise<boolean> } = {},
): Phase<C> {
  return {
    name: 'egress-selector',
    summary:
      "With --enable-edge, or joining an edge cluster's control plane (kubeadm): send the API server's connections to kubelets through the node tunnel",
    runIf: (ctx) =>
      ctx.role === 'control-plane' &&
      (isNodeTunnelled(ctx) || (deps.isEdgeCluster !== undefined && ctx.distribution.nodeTunnel !== undefined)),
    async run(ctx) {
      if (!isNodeTunnelled(ctx) && deps.isEdgeCluster) {
        ctx.isEdgeCluster = await deps.isEdgeCluster(ctx);
        if (!ctx.isEdgeCluster) {
          ctx.say('the cluster is not an edge cluster: its API servers reach kubelets directly');
          return 'unchanged';
        }
      }
      const text = renderEgressSelectorConfiguration(EGRESS_SOCKET_PATH);
      if (ctx.isDryRun) {
        ctx.say(`Would write ${EGRESS_CONFIG_PATH} (cluster egress: HTTP CONNECT on ${EGRESS_SOCKET_PATH})`);
        return 'unchanged';
      }
      await ctx.state.ensureDirectory(EGRESS_DIR);
      ctx.state.file(EGRESS_CONFIG_PATH);
      ctx.state.file(EGRESS_SOCKET_PATH);
      await ctx.state.save();
      const written = await ctx.host.put(Buffer.from(text), EGRESS_CONFIG_PATH, {
        mode: 0o600,
        sudo: true,
        description: `write ${EGRESS_CONFIG_PATH} (the API server's egress selector)`,
      });
      ctx.say(written.skipped ? `${EGRESS_CONFIG_PATH} unchanged` : `wrote ${EGRESS_CONFIG_PATH}`);
      return written.skipped ? 'unchanged' : 'changed';
    },
  };
}

/** init: the node tunnel server on the control plane. */
export function nodeTunnelServerPhase<C extends NodeTunnelData>(): Phase<C> {
  return {
    name: 'node-tunnel',
    summary: "With --enable-edge (kubeadm): run the node tunnel server (the API server reaches edge nodes' kubelets)",
    runIf: isNodeTunnelled,
    run: installServer,
  };
}

async function installServer(ctx: NodeTunnelData): Promise<PhaseOutcome> {
  const { distribution } = ctx;
  const files = distribution.nodeTunnel!;
  const binary = packagedEdgeadm(ctx);
  const unit = {
    name: NODE_TUNNEL_SERVER_UNIT_NAME,
    content: renderNodeTunnelServerUnit({
      edgeadmBin: binary.path,
      kubeconfig: distribution.adminKubeconfigPath,
      socket: EGRESS_SOCKET_PATH,
      socketDir: EGRESS_DIR,
      listen: `0.0.0.0:${NODE_TUNNEL_PORT}`,
      caFile: distribution.caPath,
      tlsCert: files.servingCertPath,
      tlsKey: files.servingKeyPath,
    }),
  };
  if (ctx.isDryRun) {
    ctx.say(`Would write the unit ${ctx.serviceManager.filesOf(unit.name)[0]} and start ${unit.name}`);
    return 'unchanged';
  }
  return installService(ctx, { unit, dataDir: NODE_TUNNEL_SERVER_DATA_DIR, binary });
}

/** What join's node-tunnel phase needs beyond the node's data. */
export interface NodeTunnelAgentData extends NodeTunnelData {
  /** Decided before any phase runs; the edge phase put it on the node. */
  edgeadmBinary?: EdgeadmBinary;
}

/**
 * join: an edge node's tunnel agent, dialling the control plane the node
 * joined through; or, on another control plane of an edge cluster, the
 * server its API server's egress selector sends to.
 */
export function nodeTunnelAgentPhase<C extends NodeTunnelAgentData>(deps: {
  nodeName(ctx: C): string;
  discovery(ctx: C): Promise<DiscoveryResult>;
}): Phase<C> {
  return {
    name: 'node-tunnel',
    summary:
      "With --enable-edge (kubeadm): run the node's tunnel agent (the API server reaches its kubelet behind NAT); on an edge cluster's control plane, the server",
    runIf: isNodeTunnelled,
    async run(ctx) {
      if (ctx.role === 'control-plane') return installServer(ctx);
      const files = ctx.distribution.nodeTunnel!;
      const binary = ctx.edgeadmBinary;
      if (!binary)
        throw new EdgeadmError('the node-tunnel phase ran without an edgeadm binary decided', { code: 'E_INTERNAL' });
      const discovery = await deps.discovery(ctx);
      const apiServer = new URL(discovery.server);
      const server = `https://${apiServer.hostname}:${NODE_TUNNEL_PORT}`;
      const unit = {
        name: NODE_TUNNEL_AGENT_UNIT_NAME,
        content: renderNodeTunnelAgentUnit({
          edgeadmBin: binary.path,
          server,
          nodeName: deps.nodeName(ctx),
          caFile: ctx.distribution.caPath,
          credentials: files.kubeletCredentialsPath,
        }),
      };
      if (ctx.isDryRun) {
        ctx.say(
          `Would write the unit ${ctx.serviceManager.filesOf(unit.name)[0]} and start ${unit.name} (to ${server})`,
        );
        return 'unchanged';
      }
      // The edge phase uploaded the binary already; only the package's is taken as is.
      return installService(ctx, {
        unit,
        dataDir: NODE_TUNNEL_AGENT_DATA_DIR,
        binary: { kind: 'package', path: binary.path },
      });
    },
  };
}
